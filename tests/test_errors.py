"""The error tree: one root, families with their own exit codes, messages kept verbatim."""

from __future__ import annotations

import inspect

import pytest

import sqlgate.errors as errors_module
from sqlgate.errors import (
    InvalidArgument,
    LimitExceeded,
    MassRewrite,
    NotFound,
    PolicyDenied,
    QueryTimeout,
    SnapshotError,
    SqlError,
    SqlgateError,
    StartupError,
)

ERRORS: list[type[SqlgateError]] = [getattr(errors_module, name) for name in errors_module.__all__]
FAMILIES = [cls for cls in ERRORS if cls.__bases__ == (SqlgateError,)]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda cls: cls.__name__)
def test_every_error_is_a_sqlgate_error(cls: type[SqlgateError]) -> None:
    assert issubclass(cls, SqlgateError)
    assert issubclass(cls, Exception)


@pytest.mark.parametrize(
    ("cls", "parent"),
    [
        pytest.param(InvalidArgument, SqlgateError, id="invalid-argument"),
        pytest.param(NotFound, SqlgateError, id="not-found"),
        pytest.param(PolicyDenied, SqlgateError, id="policy-denied"),
        pytest.param(MassRewrite, PolicyDenied, id="mass-rewrite-is-a-refusal"),
        pytest.param(LimitExceeded, SqlgateError, id="limit-exceeded"),
        pytest.param(QueryTimeout, LimitExceeded, id="timeout-is-a-limit"),
        pytest.param(SqlError, SqlgateError, id="sql-error"),
        pytest.param(SnapshotError, SqlgateError, id="snapshot-error"),
        pytest.param(StartupError, SqlgateError, id="startup-error"),
    ],
)
def test_hierarchy(cls: type[SqlgateError], parent: type[SqlgateError]) -> None:
    assert cls.__bases__ == (parent,)


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        pytest.param(SqlgateError, 1, id="unexpected"),
        pytest.param(InvalidArgument, 2, id="bad-argument"),
        pytest.param(NotFound, 3, id="not-found"),
        pytest.param(PolicyDenied, 4, id="refused"),
        pytest.param(MassRewrite, 4, id="mass-rewrite-as-refused"),
        pytest.param(LimitExceeded, 5, id="limit"),
        pytest.param(QueryTimeout, 5, id="timeout-as-limit"),
        pytest.param(SqlError, 6, id="sqlite"),
        pytest.param(SnapshotError, 7, id="snapshot"),
        pytest.param(StartupError, 8, id="startup"),
    ],
)
def test_exit_codes(cls: type[SqlgateError], code: int) -> None:
    assert cls.exit_code == code


def test_each_family_has_its_own_exit_code() -> None:
    codes = [cls.exit_code for cls in FAMILIES]
    assert len(codes) == len(set(codes))
    assert SqlgateError.exit_code not in codes
    assert 0 not in codes


def test_subclasses_exit_like_their_family() -> None:
    for cls in ERRORS:
        family = next(base for base in cls.__mro__ if base in FAMILIES or base is SqlgateError)
        assert cls.exit_code == family.exit_code


def test_the_tree_in_the_docstring_names_every_error() -> None:
    doc = inspect.getdoc(errors_module) or ""
    missing = [cls.__name__ for cls in ERRORS if cls.__name__ not in doc]
    assert not missing


def test_errors_keep_their_message_verbatim() -> None:
    message = "DROP TABLE is not allowed in write_query; use destructive_query"
    assert str(PolicyDenied(message)) == message


def test_an_error_says_its_cli_step_to_the_cli_and_its_message_to_an_agent() -> None:
    error = NotFound("no claim 9; claim_search finds ids", cli="no claim 9; `sqlgate claims list`")
    assert (str(error), error.for_cli()) == (
        "no claim 9; claim_search finds ids",
        "no claim 9; `sqlgate claims list`",
    )
    plain = NotFound("no database at x")
    assert plain.for_cli() == str(plain) == "no database at x"


def test_catching_the_root_catches_every_error() -> None:
    for cls in ERRORS:
        with pytest.raises(SqlgateError):
            raise cls("x")
