"""Field operations for reindex scripts: the generated Painless, path validation, and
composition with raw scripts."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper.indexes import compose_reindex_script
from esmapper.reindex_scripts import script_units


def test_a_top_level_rename_is_the_reference_text() -> None:
    assert em.rename_field("dept", "department").statements == (
        "if (ctx._source.containsKey('dept')) { ctx._source.department = ctx._source.dept; }",
        "if (ctx._source.containsKey('dept')) { ctx._source.remove('dept'); }",
    )


def test_a_nested_rename_is_the_reference_text() -> None:
    assert em.rename_field("data.oldField", "data.newField").statements == (
        "if (ctx._source.data != null && ctx._source.data.containsKey('oldField')) { "
        "if (ctx._source.data == null) { ctx._source.data = [:]; } "
        "ctx._source.data.newField = ctx._source.data.oldField; }",
        "if (ctx._source.data != null && ctx._source.data.containsKey('oldField')) { "
        "ctx._source.data.remove('oldField'); }",
    )


def test_moves_between_parents_guard_every_level_and_create_missing_parents() -> None:
    (copy,) = em.rename_field("a.b.c", "x.y.z", remove_original=False).statements
    assert copy == (
        "if (ctx._source.a != null && ctx._source.a.b != null && "
        "ctx._source.a.b.containsKey('c')) { "
        "if (ctx._source.x == null) { ctx._source.x = [:]; } "
        "if (ctx._source.x.y == null) { ctx._source.x.y = [:]; } "
        "ctx._source.x.y.z = ctx._source.a.b.c; }"
    )
    promote = em.rename_field("data.name", "display_name")
    assert promote.statements[0].endswith("{ ctx._source.display_name = ctx._source.data.name; }")
    assert str(promote) == " ".join(promote.statements)
    assert promote.description == "rename data.name -> display_name"


@pytest.mark.parametrize(
    ("name", "access"),
    [
        ("@timestamp", "ctx._source['@timestamp']"),
        ("my-field", "ctx._source['my-field']"),
        ("with space", "ctx._source['with space']"),
        ("1st", "ctx._source['1st']"),
        ("if", "ctx._source['if']"),  # a Painless keyword
        ("empty", "ctx._source['empty']"),  # m.empty would be m.isEmpty()
        ("élan", "ctx._source['élan']"),
        ("snake_case_1", "ctx._source.snake_case_1"),
    ],
)
def test_non_identifiers_use_bracket_notation(name: str, access: str) -> None:
    (copy, _) = em.rename_field(name, "target").statements
    assert copy == (f"if (ctx._source.containsKey('{name}')) {{ ctx._source.target = {access}; }}")


@pytest.mark.parametrize(
    "path",
    [
        "it's",
        "back\\slash",
        "new\nline",
        "tab\there",
        "nul\x00",
        "ls\u2028",
        "",
        "a..b",
        ".a",
        "a.",
    ],
)
def test_paths_that_could_break_the_script_are_refused(path: str) -> None:
    with pytest.raises(ValueError, match=r"field path|cannot appear"):
        em.remove_field(path)
    with pytest.raises(ValueError):
        em.rename_field("ok", path)
    with pytest.raises(ValueError):
        em.rename_field(path, "ok")


@pytest.mark.parametrize(("old", "new"), [("a", "a"), ("a", "a.b"), ("a.b", "a")])
def test_a_rename_into_itself_is_refused(old: str, new: str) -> None:
    with pytest.raises(ValueError, match="rename_field"):
        em.rename_field(old, new)


def test_a_path_must_be_a_string() -> None:
    with pytest.raises(ValueError, match="not int"):
        em.remove_field(3)  # type: ignore[arg-type]


def test_field_operations_in_a_row_form_one_plain_script() -> None:
    rename, remove = em.rename_field("nick", "handle"), em.remove_field("tmp")
    scripts: dict[int, Any] = {2: rename, 3: remove}
    assert compose_reindex_script(scripts, 1, 3) == " ".join(rename.statements + remove.statements)
    assert compose_reindex_script(scripts, 2, 3) == remove.statements[0]
    assert compose_reindex_script(scripts, 3, 3) is None


def test_raw_scripts_keep_their_own_function() -> None:
    rename, remove = em.rename_field("a", "b"), em.remove_field("c")
    scripts: dict[int, Any] = {2: [rename, "raw2;"], 3: "raw3;", 4: [remove, em.remove_field("d")]}
    assert script_units(scripts, 1, 4) == [
        str(rename),
        "raw2;",
        "raw3;",
        f"{remove} {em.remove_field('d')}",
    ]
    assert compose_reindex_script(scripts, 1, 4) == (
        f"void f000(def ctx) {{ {rename} }}\n"
        "void f001(def ctx) { raw2; }\n"
        "void f002(def ctx) { raw3; }\n"
        f"void f003(def ctx) {{ {remove} {em.remove_field('d')} }}\n"
        "f000(ctx); f001(ctx); f002(ctx); f003(ctx); "
    )


@pytest.mark.parametrize(
    ("scripts", "message"),
    [
        ({1: "x;"}, "key 1 is not a version"),
        ({True: "x;"}, "key True"),
        ({"2": "x;"}, "key '2'"),
        ({2: ""}, "neither a Painless source"),
        ({2: 42}, "neither a Painless source"),
        ({2: []}, "empty list"),
        ({2: [em.remove_field("a"), None]}, "None is neither"),
        (["x;"], "must map versions to scripts"),
    ],
)
def test_invalid_reindex_scripts_are_refused_when_the_class_is_defined(
    scripts: Any, message: str
) -> None:
    with pytest.raises(em.IndexConfigurationError, match=message) as caught:

        class Thing(em.Document):
            class Index:
                name = "things"
                version = 2
                reindex_scripts = scripts

    assert "Thing.Index.reindex_scripts" in str(caught.value)


def test_valid_reindex_scripts_are_kept_as_declared() -> None:
    scripts = {2: em.rename_field("nick", "handle"), 3: [em.remove_field("tmp"), "ctx.op;"]}

    class Person(em.Document):
        class Index:
            name = "people"
            version = 3
            reindex_scripts = scripts

    assert Person.__esmapper__.index.reindex_scripts == scripts  # type: ignore[attr-defined]
