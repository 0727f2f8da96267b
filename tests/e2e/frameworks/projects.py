"""Development databases built by the frameworks' own commands, each in a project folder that
is a git repository (as an app's is), so sqlgate's home for it is the project's `.sqlgate/`.

Every command runs as `sys.executable -m django|alembic` or `python manage.py`, offline. The
app's own code (the ORM) writes rows from a subprocess of its own: another process on the
same file, as the app's dev server would be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = {
    "username": "admin",
    "email": "admin@example.com",
    "password": "not-a-secret-42",  # publish-gate: allow
}

DJANGO_MODEL = """\
from django.conf import settings
from django.db import models


class Order(models.Model):
    customer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    number = models.CharField(max_length=20, unique=True)
    total = models.DecimalField(max_digits=10, decimal_places=2)
    shipped = models.BooleanField(default=False)
    placed_at = models.DateTimeField(auto_now_add=True)
"""
DJANGO_ADMIN = """\
from django.contrib import admin

from .models import Order

admin.site.register(Order)
"""
DJANGO_SETTINGS = '\nINSTALLED_APPS += ["shop"]\n'
DJANGO_WAL = 'DATABASES["default"]["OPTIONS"] = {"init_command": "PRAGMA journal_mode=wal"}\n'

ADD_ORDER = """\
from django.contrib.auth.models import User
from shop.models import Order
Order.objects.create(customer=User.objects.get(username="admin"), number={number!r}, total="12.50")
"""
ORDER_NUMBERS = """\
from shop.models import Order
print(",".join(Order.objects.filter(customer__username="admin").order_by("number")
               .values_list("number", flat=True)))
"""
# setup_test_environment() is what adds `testserver` to ALLOWED_HOSTS for the test client
ADMIN_REQUESTS = """\
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
client = Client()
print(client.get("/admin/login/").status_code)
print(client.login(username={username!r}, password={password!r}))
print(client.get("/admin/").status_code)
print(client.get("/admin/shop/order/").status_code)
"""

SQLALCHEMY_MODELS = """\
from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)


class Book(Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    author: Mapped[Author] = relationship()
"""
SESSION_PRELUDE = """\
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session
from models import Author, Book
engine = create_engine("sqlite:///db.sqlite3")
"""
ADD_BOOK = """\
with Session(engine) as session, session.begin():
    author = session.scalars(select(Author).where(Author.name == {author!r})).one_or_none()
    session.add(Book(title={title!r}, author=author or Author(name={author!r})))
"""
BOOK_TITLES = """\
with Session(engine) as session:
    print(",".join(session.scalars(select(Book.title).order_by(Book.title))))
"""


def framework_env() -> dict[str, str]:
    """The test's environment for the frameworks' commands: no SQLGATE_* settings, no
    bytecode files written into the project."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a framework's command in `cwd`; its stdout, or a failure showing all it said."""
    done = subprocess.run(argv, cwd=cwd, env=env or framework_env(), capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    said = f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"  # the end: a framework says much
    assert done.returncode == 0, f"`{' '.join(argv)}` exited {done.returncode}:\n{said}"
    return done.stdout


def git_init(folder: Path) -> None:
    """Make `folder` a repository, as an app's project is (the home is found by its .git)."""
    run(["git", "init", "-q", str(folder)], cwd=folder)


@dataclass(frozen=True)
class DjangoProject:
    """`django-admin startproject mysite` with an app `shop` (model `Order`, a ForeignKey to
    `auth.User`), migrated, and a superuser; its database in `journal` mode."""

    folder: Path
    journal: str

    @property
    def db(self) -> Path:
        return self.folder / "db.sqlite3"

    def manage(self, *args: str) -> str:
        return run([sys.executable, "manage.py", *args], cwd=self.folder)

    def shell(self, code: str) -> str:
        """Run Django code in the project (`manage.py shell -c`); what it printed."""
        return self.manage("shell", "-v", "0", "-c", code)

    def add_order(self, number: str) -> None:
        """The app writes: a new order of the superuser, through the ORM."""
        self.shell(ADD_ORDER.format(number=number))

    def order_numbers(self) -> list[str]:
        """The app reads: the superuser's orders, through the ORM."""
        return [n for n in self.shell(ORDER_NUMBERS).strip().split(",") if n]

    def admin_requests(self) -> list[str]:
        """Through Django's test client: the status of the admin login page, the superuser's
        login (True), the admin index and its list of orders."""
        code = ADMIN_REQUESTS.format(username=SUPERUSER["username"],
                                     password=SUPERUSER["password"])  # fmt: skip
        return self.shell(code).split()

    def copy_to(self, folder: Path) -> DjangoProject:
        shutil.copytree(self.folder, folder)
        return DjangoProject(folder, self.journal)


def build_django(folder: Path, journal: str) -> DjangoProject:
    """Build the project in `folder` (new) with Django's own commands."""
    folder.mkdir(parents=True)
    run([sys.executable, "-m", "django", "startproject", "mysite", str(folder)], cwd=folder)
    git_init(folder)
    project = DjangoProject(folder, journal)
    project.manage("startapp", "shop")
    (folder / "shop" / "models.py").write_text(DJANGO_MODEL, encoding="utf-8")
    (folder / "shop" / "admin.py").write_text(DJANGO_ADMIN, encoding="utf-8")
    settings = folder / "mysite" / "settings.py"
    extra = DJANGO_SETTINGS + (DJANGO_WAL if journal == "wal" else "")
    settings.write_text(settings.read_text(encoding="utf-8") + extra, encoding="utf-8")
    project.manage("makemigrations", "shop", "-v", "0")
    project.manage("migrate", "-v", "0")
    env = framework_env()
    env.update({f"DJANGO_SUPERUSER_{key.upper()}": value for key, value in SUPERUSER.items()})
    run([sys.executable, "manage.py", "createsuperuser", "--noinput", "-v", "0"], folder, env)
    return project


@dataclass(frozen=True)
class AlembicProject:
    """SQLAlchemy models (`authors`, `books` with a ForeignKey), `alembic init`, an
    autogenerated first revision, upgraded to head."""

    folder: Path

    @property
    def db(self) -> Path:
        return self.folder / "db.sqlite3"

    def alembic(self, *args: str) -> str:
        return run([sys.executable, "-m", "alembic", *args], cwd=self.folder)

    def session(self, code: str) -> str:
        """Run SQLAlchemy code with an engine on the project's database; what it printed."""
        return run([sys.executable, "-c", SESSION_PRELUDE + code], cwd=self.folder)

    def add_book(self, title: str, author: str = "ada") -> None:
        """The app writes: a book (and its author, if new) in one ORM session."""
        self.session(ADD_BOOK.format(title=title, author=author))

    def book_titles(self) -> list[str]:
        return [t for t in self.session(BOOK_TITLES).strip().split(",") if t]

    def copy_to(self, folder: Path) -> AlembicProject:
        shutil.copytree(self.folder, folder)
        return AlembicProject(folder)


def build_alembic(folder: Path) -> AlembicProject:
    """Build the project in `folder` (new) with Alembic's own commands."""
    folder.mkdir(parents=True)
    git_init(folder)
    (folder / "models.py").write_text(SQLALCHEMY_MODELS, encoding="utf-8")
    project = AlembicProject(folder)
    project.alembic("init", "migrations")
    ini = folder / "alembic.ini"
    ini.write_text(
        "\n".join(
            "sqlalchemy.url = sqlite:///db.sqlite3" if line.startswith("sqlalchemy.url") else line
            for line in ini.read_text(encoding="utf-8").splitlines()
        )
        + "\n",
        encoding="utf-8",
    )
    env_py = folder / "migrations" / "env.py"
    text = env_py.read_text(encoding="utf-8")
    assert "\ntarget_metadata = None\n" in text, "alembic init's env.py changed its shape"
    text = text.replace(
        "\ntarget_metadata = None\n", "\nfrom models import Base\ntarget_metadata = Base.metadata\n"
    )
    env_py.write_text(text, encoding="utf-8")
    project.alembic("revision", "--autogenerate", "-m", "init")
    project.alembic("upgrade", "head")
    return project
