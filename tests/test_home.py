"""sqlgate's home: the project found like `.git`, the per-user home, records folders' keys,
their modes, and the databases a home guards."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import platformdirs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlgate.home as home_module
from sqlgate.errors import SqlgateError
from sqlgate.home import (
    HOME_DIR,
    Home,
    HomeRefused,
    check_folder,
    db_key,
    find_root,
    guarded,
    home_of,
    make_dir,
    note_guarded,
    user_home,
)


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home folder and a per-user data folder of the test's own, and a folder for
    projects outside both."""
    folders = {name: tmp_path / name for name in ("home", "data", "work")}
    for folder in folders.values():
        folder.mkdir()
    monkeypatch.setenv("HOME", str(folders["home"]))
    monkeypatch.setattr(home_module, "user_data_folder", lambda: folders["data"])
    return folders


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- the walk --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("marker", "kind"),
    [
        pytest.param(".sqlgate", "dir", id="sqlgate-folder"),
        pytest.param(".git", "dir", id="git-folder"),
        pytest.param(".git", "file", id="git-file-of-a-worktree"),
    ],
)
@pytest.mark.parametrize("depth", [0, 1, 5], ids=["at-the-root", "one-down", "five-down"])
def test_the_walk_finds_the_project_from_any_subfolder(
    places: dict[str, Path], marker: str, kind: str, depth: int
) -> None:
    project = places["work"] / "app"
    project.mkdir()
    if kind == "dir":
        (project / marker).mkdir()
    else:
        (project / marker).write_text("gitdir: /elsewhere/.git/worktrees/app\n")
    start = project.joinpath(*[f"sub{n}" for n in range(depth)])
    start.mkdir(parents=True, exist_ok=True)
    assert find_root(start) == project.resolve()


def test_a_sqlgate_folder_further_up_beats_a_nearer_git(places: dict[str, Path]) -> None:
    outer = places["work"] / "outer"
    inner = outer / "vendored"
    (inner / "src").mkdir(parents=True)
    (outer / HOME_DIR).mkdir()
    (inner / ".git").mkdir()
    assert find_root(inner / "src") == outer.resolve()
    assert find_root(inner / "src", git=False) == outer.resolve()


def test_without_git_only_a_sqlgate_folder_counts(places: dict[str, Path]) -> None:
    project = places["work"] / "app"
    (project / "sub").mkdir(parents=True)
    (project / ".git").mkdir()
    assert find_root(project / "sub") == project.resolve()
    assert find_root(project / "sub", git=False) is None


def test_no_marker_up_to_the_filesystem_root_is_no_project(places: dict[str, Path]) -> None:
    start = places["work"] / "a" / "b"
    start.mkdir(parents=True)
    assert find_root(start) is None


@pytest.mark.parametrize("marker", [".git", ".sqlgate"])
def test_the_home_folder_is_never_a_project(places: dict[str, Path], marker: str) -> None:
    """A dotfiles repository (or a ~/.sqlgate) does not make every folder below a project."""
    home = places["home"]
    (home / marker).mkdir()
    (home / "code" / "notes").mkdir(parents=True)
    assert find_root(home / "code" / "notes") is None
    assert find_root(home) is None


def test_the_walk_stops_at_the_home_folder(places: dict[str, Path]) -> None:
    """Folders above the home folder are not looked at from inside it."""
    (places["home"].parent / ".git").mkdir()  # tmp_path: above the home folder
    start = places["home"] / "code"
    start.mkdir()
    assert find_root(start) is None
    assert find_root(places["work"]) == places["work"].parent.resolve()  # outside: it is


def test_a_project_inside_the_home_folder_is_found(places: dict[str, Path]) -> None:
    project = places["home"] / "code" / "app"
    (project / "src").mkdir(parents=True)
    (project / ".git").mkdir()
    (places["home"] / ".git").mkdir()
    assert find_root(project / "src") == project.resolve()


@pytest.mark.parametrize("shape", ["file", "link-to-a-folder", "broken-link"])
def test_a_sqlgate_that_is_no_real_folder_is_no_home(places: dict[str, Path], shape: str) -> None:
    project = places["work"] / "app"
    (project / "sub").mkdir(parents=True)
    marker = project / HOME_DIR
    if shape == "file":
        marker.write_text("not a folder")
    elif shape == "link-to-a-folder":
        (places["work"] / "elsewhere").mkdir()
        marker.symlink_to(places["work"] / "elsewhere")
    else:
        marker.symlink_to(places["work"] / "missing")
    assert find_root(project / "sub") is None
    (project / ".git").mkdir()  # still the project, by its .git: nothing is made there
    root = find_root(project / "sub")
    assert root == project.resolve()
    home = Home(root / HOME_DIR, root)
    with pytest.raises(HomeRefused, match="real folder"):
        make_dir(home.folder / "dbs", home)
    assert guarded(home) == []
    assert not (places["work"] / "elsewhere" / "dbs").exists()


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads all")
def test_an_unreadable_folder_on_the_way_is_passed_over(places: dict[str, Path]) -> None:
    project = places["work"] / "app"
    locked = project / "locked"
    (locked / "deep").mkdir(parents=True)
    (project / ".git").mkdir()
    locked.chmod(0o311)  # can be crossed, not listed
    try:
        assert find_root(locked / "deep") == project.resolve()
    finally:
        locked.chmod(0o755)


def test_the_walk_follows_the_real_path_of_a_linked_start(places: dict[str, Path]) -> None:
    project = places["work"] / "app"
    (project / "sub").mkdir(parents=True)
    (project / ".git").mkdir()
    link = places["work"] / "shortcut"
    link.symlink_to(project / "sub")
    assert find_root(link) == project.resolve()


# -- a database's home -------------------------------------------------------------------------
def test_a_database_in_a_project_has_the_projects_home(places: dict[str, Path]) -> None:
    project = places["work"] / "app"
    (project / "data").mkdir(parents=True)
    (project / ".git").mkdir()
    db = project / "data" / "db.sqlite3"
    db.write_bytes(b"")
    root = project.resolve()
    assert home_of(db) == Home(root / HOME_DIR, root)


@pytest.mark.parametrize("where", ["outside-any-project", "in-the-per-user-folder"])
def test_other_databases_have_the_per_user_home(places: dict[str, Path], where: str) -> None:
    folder = places["work"] if where == "outside-any-project" else places["data"]
    (places["data"] / ".git").mkdir()  # even a repository there does not make it a project
    db = folder / "memory.db"
    assert home_of(db) == user_home() == Home(places["data"], None)


def test_a_linked_database_has_its_targets_home_and_key(places: dict[str, Path]) -> None:
    project = places["work"] / "app"
    project.mkdir()
    (project / ".git").mkdir()
    target = project / "db.sqlite3"
    target.write_bytes(b"")
    elsewhere = places["work"] / "links"
    elsewhere.mkdir()
    link = elsewhere / "db.sqlite3"
    link.symlink_to(target)
    home = home_of(link)
    assert home == home_of(target)
    assert db_key(link, home) == db_key(target, home)
    assert home.records_dir(link) == home.records_dir(target)


# -- keys ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("relative", "readable"),
    [
        pytest.param("db.sqlite3", "db.sqlite3", id="at-the-root"),
        pytest.param("app/data/db.sqlite3", "app__data__db.sqlite3", id="in-folders"),
        pytest.param(".sqlgate/agent.db", ".sqlgate__agent.db", id="the-projects-own"),
        pytest.param("my data/café.db", "my_data__caf_.db", id="spaces-and-accents"),
        pytest.param("x" * 80 + ".db", ("x" * 80 + ".db")[-60:], id="long-kept-its-end"),
    ],
)
def test_a_key_is_the_relative_path_then_a_hash(
    places: dict[str, Path], relative: str, readable: str
) -> None:
    root = places["work"].resolve()
    key = db_key(root / relative, Home(root / HOME_DIR, root))
    text, _, digest = key.rpartition("-")
    assert text == readable
    assert re.fullmatch(r"[0-9a-f]{8}", digest)


def test_the_per_user_key_is_made_from_the_absolute_path(places: dict[str, Path]) -> None:
    db = places["work"].resolve() / "memory.db"
    key = db_key(db, user_home())
    assert key.startswith(db.as_posix().lstrip("/").replace("/", "__")[-60:] + "-")


def test_keys_tell_apart_paths_that_read_alike(places: dict[str, Path]) -> None:
    root = places["work"].resolve()
    home = Home(root / HOME_DIR, root)
    alike = ["a/b.db", "a__b.db", "a b.db", "a_b.db", "a?b.db"]
    keys = {db_key(root / name, home) for name in alike}
    assert len(keys) == len(alike)


_NAME = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1
).filter(lambda name: name not in (".", ".."))


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_NAME, min_size=1, max_size=4), min_size=2, max_size=6, unique_by=tuple))
def test_distinct_paths_get_distinct_safe_short_keys(
    tmp_path: Path, paths: list[list[str]]
) -> None:
    root = tmp_path.resolve()
    home = Home(root / HOME_DIR, root)
    keys = [db_key(root.joinpath(*parts), home) for parts in paths]
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert re.fullmatch(r"[A-Za-z0-9._-]+", key)
        assert len(key) <= 70
        assert key not in (".", "..")
        assert not key.startswith("-")


# -- folders in a home -----------------------------------------------------------------------
@pytest.mark.parametrize("mask", [0o000, 0o022, 0o077], ids=["umask-0", "umask-022", "umask-077"])
@pytest.mark.usefixtures("umask")
def test_folders_are_made_0700_whatever_the_umask(places: dict[str, Path], mask: int) -> None:
    os.umask(mask)
    root = places["work"].resolve()
    home = Home(root / HOME_DIR, root)
    made = make_dir(home.records_dir(root / "db.sqlite3") / "snapshots", home)
    for folder in (home.folder, home.folder / "dbs", made.parent, made):
        assert folder.is_dir()
        assert mode(folder) == 0o700


def test_a_new_home_ignores_itself_in_git(places: dict[str, Path]) -> None:
    root = places["work"].resolve()
    home = Home(root / HOME_DIR, root)
    make_dir(home.folder / "dbs", home)
    assert (home.folder / ".gitignore").read_text() == "*\n"


def test_an_existing_home_is_left_as_it_is(places: dict[str, Path]) -> None:
    root = places["work"].resolve()
    home = Home(root / HOME_DIR, root)
    home.folder.mkdir(mode=0o755)
    (home.folder / "agent.db").write_bytes(b"")
    make_dir(home.folder / "dbs", home)
    assert not (home.folder / ".gitignore").exists()  # the person's folder: no new file
    assert mode(home.folder / "dbs") == 0o700


def test_the_per_user_home_is_made_with_its_missing_parents(places: dict[str, Path]) -> None:
    home = Home(places["data"] / "deeper" / "sqlgate", None)
    made = make_dir(home.folder / "dbs" / "k", home)
    assert made.is_dir()
    assert mode(home.folder) == 0o700


@pytest.mark.parametrize(
    "outside",
    [
        pytest.param("../elsewhere", id="beside"),
        pytest.param("dbs/../../up", id="dot-dot-inside"),
        pytest.param("/tmp", id="absolute"),
    ],
)
def test_make_dir_refuses_a_path_outside_the_home(places: dict[str, Path], outside: str) -> None:
    root = places["work"].resolve()
    home = Home(root / HOME_DIR, root)
    with pytest.raises(HomeRefused, match="outside sqlgate's home") as caught:
        make_dir(home.folder / outside, home)
    assert isinstance(caught.value, SqlgateError)
    assert "\n" not in str(caught.value)
    assert not (root / "elsewhere").exists()
    assert not (root / "up").exists()


def test_make_dir_refuses_a_linked_folder_inside_the_home(places: dict[str, Path]) -> None:
    root = places["work"].resolve()
    home = Home(root / HOME_DIR, root)
    make_dir(home.folder, home)
    (root / "outside").mkdir()
    (home.folder / "dbs").symlink_to(root / "outside")
    with pytest.raises(HomeRefused, match="symbolic link"):
        make_dir(home.folder / "dbs" / "k", home)
    assert list((root / "outside").iterdir()) == []


# -- the databases a home guards ---------------------------------------------------------------
def project_home(places: dict[str, Path]) -> Home:
    root = places["work"].resolve()
    return Home(root / HOME_DIR, root)


def test_noted_databases_are_listed(places: dict[str, Path]) -> None:
    home = project_home(places)
    root = home.root
    assert root is not None
    for name in ("db.sqlite3", "app/other.db"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
        records = note_guarded(root / name, home)
        assert records == home.records_dir(root / name)
        note = records / "guarded.json"
        assert json.loads(note.read_text()) == {"format": 1, "path": name}
        assert mode(note) == 0o600
    assert guarded(home) == [root / "app" / "other.db", root / "db.sqlite3"]
    assert list(home.folder.rglob("*.tmp")) == []  # the temporary files were renamed


def test_the_projects_own_database_is_listed_once(places: dict[str, Path]) -> None:
    home = project_home(places)
    make_dir(home.folder, home)
    agent = home.folder / "agent.db"
    assert guarded(home) == []
    agent.write_bytes(b"")
    assert guarded(home) == [agent]
    note_guarded(agent, home)
    assert guarded(home) == [agent]


def test_the_per_user_home_notes_absolute_paths(places: dict[str, Path]) -> None:
    home = user_home()
    db = places["work"].resolve() / "x.db"
    db.write_bytes(b"")
    records = note_guarded(db, home)
    assert json.loads((records / "guarded.json").read_text())["path"] == db.as_posix()
    assert guarded(home) == [db]


def test_note_guarded_refuses_a_database_outside_the_project(places: dict[str, Path]) -> None:
    home = project_home(places)
    with pytest.raises(HomeRefused, match="outside the project"):
        note_guarded(places["home"] / "x.db", home)


BAD_NOTES = [
    pytest.param(None, id="no-guarded-json"),
    pytest.param(b"{not json", id="not-json"),
    pytest.param(b"\xff\xfe", id="not-utf8"),
    pytest.param(b"[1, 2]", id="not-an-object"),
    pytest.param(b'{"format": 2, "path": "db.sqlite3"}', id="unknown-format"),
    pytest.param(b'{"format": true, "path": "db.sqlite3"}', id="format-not-a-number"),
    pytest.param(b'{"format": 1}', id="no-path"),
    pytest.param(b'{"format": 1, "path": 7}', id="path-not-text"),
    pytest.param(b'{"format": 1, "path": ""}', id="empty-path"),
    pytest.param(b'{"format": 1, "path": "gone.db"}', id="file-deleted"),
    pytest.param(b'{"format": 1, "path": "other.db"}', id="copied-folder-other-key"),
    pytest.param(b'{"format": 1, "path": "../home/x.db"}', id="leaves-the-project"),
    pytest.param(b'{"format": 1, "path": "/etc/hostname"}', id="absolute-in-a-project"),
    pytest.param(b'{"format": 1, "path": "a\\u0000b"}', id="nul-in-the-path"),
]


@pytest.mark.parametrize("content", BAD_NOTES)
def test_a_note_that_does_not_hold_is_skipped(places: dict[str, Path], content: bytes) -> None:
    home = project_home(places)
    root = home.root
    assert root is not None
    for name in ("db.sqlite3", "other.db"):
        (root / name).write_bytes(b"")
    key = db_key(root / ("gone.db" if b"gone" in (content or b"") else "db.sqlite3"), home)
    folder = make_dir(home.folder / "dbs" / key, home)
    if content is not None:
        (folder / "guarded.json").write_bytes(content)
    (home.folder / "dbs" / "stray-file").write_text("x")  # not a folder: skipped too
    assert guarded(home) == []


def test_a_home_without_a_dbs_folder_guards_nothing(places: dict[str, Path]) -> None:
    home = project_home(places)
    assert guarded(home) == []  # no .sqlgate at all
    make_dir(home.folder, home)
    assert guarded(home) == []


@pytest.mark.parametrize(
    ("shape", "refused"),
    [("missing", False), ("folder", False), ("file", True), ("link", True)],
)
def test_check_folder_refuses_only_what_is_no_real_folder(
    tmp_path: Path, shape: str, refused: bool
) -> None:
    folder = tmp_path / HOME_DIR
    if shape == "folder":
        folder.mkdir()
    elif shape == "file":
        folder.write_text("x")
    elif shape == "link":
        (tmp_path / "target").mkdir()
        folder.symlink_to(tmp_path / "target")
    if refused:
        with pytest.raises(HomeRefused, match="real folder"):
            check_folder(folder)
    else:
        check_folder(folder)


@pytest.mark.parametrize(
    ("target", "listed"),
    [("inside", True), ("outside", False)],
    ids=["link-inside-the-project", "link-out-of-the-project"],
)
def test_a_linked_agent_db_is_listed_only_inside_the_project(
    places: dict[str, Path], target: str, listed: bool
) -> None:
    home = project_home(places)
    assert home.root is not None
    make_dir(home.folder, home)
    real = (home.root / "data.db") if target == "inside" else (places["home"] / "memory.db")
    real.write_bytes(b"")
    (home.folder / "agent.db").symlink_to(real)
    assert guarded(home) == ([home.folder / "agent.db"] if listed else [])


def test_records_remembered_by_servers_starting_together_are_all_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """known-records.json is read, changed and replaced under a lock: no note is lost when
    several servers first open their databases at once (it tells a deleted records folder
    apart from a new database)."""
    import threading

    from sqlgate.home import remember_records, remembered_records

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    dbs = []
    for n in range(24):
        db = tmp_path / f"db{n}.sqlite"
        db.write_bytes(b"")
        dbs.append(db)
    start = threading.Barrier(len(dbs))

    def remember(db: Path) -> None:
        start.wait()
        remember_records(db, tmp_path / "records" / db.name, "2026-12-07T00:00:00.000Z")

    threads = [threading.Thread(target=remember, args=(db,)) for db in dbs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for db in dbs:
        assert remembered_records(db) == {
            "records": str(tmp_path / "records" / db.name),
            "since": "2026-12-07T00:00:00.000Z",
        }


@pytest.mark.parametrize("xdg", [None, "", "   ", "/srv/data"])
def test_the_per_user_folder_is_platformdirs_own(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """user_data_folder spells out platformdirs' rule (to spare its import at start-up):
    the same folder, whatever XDG_DATA_HOME holds."""

    from sqlgate.home import user_data_folder

    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert user_data_folder() == Path(platformdirs.user_data_dir("sqlgate", appauthor=False))
