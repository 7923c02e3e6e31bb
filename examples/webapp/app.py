"""The employee directory, a Flask application: ``create_app(mapper)``.

Every request gets its own esmapper session (:mod:`esmapper.contrib.flask`), committed when
the view returns a success and rolled back otherwise. Views that write call
``session.flush()`` themselves, so validation errors and version conflicts are shown on the
page rather than turning into a 500; the redirect that follows (POST-redirect-GET, status
303) finds the data searchable because the session writes with ``consistency="wait"``.

Pages:

- ``/employees``: filter (Lucene syntax, checked by esmapper: an invalid filter is a message
  with the field and position, status 400), sort (column headers), pages (``limit`` and
  ``page``);
- ``/employees/new``, ``/employees/<id>/edit``: forms; the edit form carries the
  ``version`` it was rendered from and a save over a newer version is refused with the
  current values (status 409), never written over;
- ``/employees/<id>/delete``: soft delete into the recycle bin, ``/trash``: restore or purge
  (hard delete) one employee, or empty the bin, each hard delete after a confirmation page;
  saving the edit of an employee deleted meanwhile explains it and offers to restore it
  with the edit or to create it again;
- unknown addresses and ids: a 404 page;
- ``/teams``: the teams (ids composed from company and slug) with their head counts;
  ``/teams/<slug>/fields``: a team's custom fields (:mod:`examples.webapp.fields`), which
  its members' form shows and ``/employees?team=<slug>`` filters and sorts by (an unknown
  team is said so; a team's field named without a team says which team to pick);
- every page shows a value by one rule (:func:`shown`): an empty one as "—", a yes/no one
  as yes or no.

This is an example: there is no authentication and no CSRF protection.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import secrets
from collections.abc import Iterable
from typing import Any

import attrs
from flask import (
    Blueprint,
    Flask,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.wrappers import Response

import esmapper as em
from esmapper.contrib.flask import current_mapper, init_app, session
from esmapper.query import escape_query_value
from examples.webapp.fields import (
    apply_custom,
    custom_form_names,
    custom_values,
    fields_bp,
    team_fields,
)
from examples.webapp.forms import (
    EMPLOYEE_FORM,
    LABELS,
    TEAM_FIELDS,
    Errors,
    apply_employee,
    apply_team,
    employee_values,
    error_for,
    read_form,
)
from examples.webapp.models import DEFAULT_COMPANY, Employee, Team

__all__ = ["SORT_COLUMNS", "bp", "create_app"]

#: Sortable columns of the list: (sort field, header).
SORT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("name", "Name"),
    ("title", "Title"),
    ("department", "Department"),
    ("team", "Team"),
    ("age", "Age"),
    ("address.city", "City"),
    ("updated_utc", "Updated"),
)
DEFAULT_SORT = "name"
MAX_PAGE_SIZE = 100
#: Elasticsearch's default ``index.max_result_window``: page paging stops there.
RESULT_WINDOW = 10_000

SOFT_DELETE_FIELD = "is_deleted"
DELETED_FILTER_MESSAGE = (
    "The filter cannot name is_deleted: deleted employees are kept apart. This list shows "
    "the active employees and the recycle bin the deleted ones; remove is_deleted from "
    "the filter, or open the recycle bin."
)

bp = Blueprint("directory", __name__)


def create_app(mapper: em.Mapper, **config: Any) -> Flask:
    """The directory application on ``mapper`` (its indexes must exist: run
    ``mapper.migrate()`` or ``mapper.configure_indexes()`` first).

    ``config`` overrides the Flask settings: ``COMPANY_ID`` (default ``"acme"``),
    ``PAGE_SIZE`` (default 10), ``SECRET_KEY`` (default ``$SECRET_KEY``, else random), ...

    The flash messages ("Jane Roe was saved.") travel in Flask's signed session cookie
    from the request that sets them to the page after the redirect. With several worker
    processes, that page may be served by another worker: every worker must sign with the
    same ``SECRET_KEY``. A deployment sets it in the environment of all its workers (e.g.
    ``SECRET_KEY=$(python -c 'import secrets; print(secrets.token_hex(32))')`` once, kept
    with its other secrets); the random default is only for a single process.
    """
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_hex(16),
        COMPANY_ID=DEFAULT_COMPANY,
        PAGE_SIZE=10,
    )
    app.config.update(config)
    # One session per request; writes wait for the refresh so a redirect shows them.
    init_app(app, mapper, consistency="wait")
    app.register_blueprint(bp)
    app.register_blueprint(fields_bp)
    app.register_error_handler(em.QueryValidationError, _query_error_page)
    app.register_error_handler(em.VersionConflictError, _conflict_error_page)
    app.register_error_handler(404, _not_found_page)
    app.register_error_handler(405, _not_allowed_page)
    app.after_request(_name_the_worker)
    return app


def _name_the_worker(response: Response) -> Response:
    """``X-Worker: <pid>``: which process answered (the app may run as several workers)."""
    response.headers["X-Worker"] = str(os.getpid())
    return response


# -- helpers -----------------------------------------------------------------------------


def _see_other(endpoint: str, **values: Any) -> Response:
    """The redirect of POST-redirect-GET (303: the browser follows with a GET)."""
    return redirect(url_for(endpoint, **values), code=303)


#: How an empty value reads on every page (list cells, detail rows): one rule.
EMPTY = "—"


@bp.app_template_filter("shown")
def shown(value: Any) -> str:
    """A value as every page shows it: empty (``None``, ``""``, an empty list) is
    :data:`EMPTY`, a yes/no value ``yes``/``no``, a list its items joined by commas, a
    date ``YYYY-MM-DD`` (a custom field's stored form text, :func:`custom_values`, reads
    the same)."""
    if value is None or value in ("", []):
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ", ".join(shown(item) for item in value)
    return str(value)


bp.add_app_template_global(custom_values, "custom_values_of")


def _load(model: type[Any], id: str, **options: Any) -> Any:
    """``session.get``, with an id that cannot exist (too long, bad characters) as ``None``."""
    try:
        return session.get(model, id, **options)
    except (em.IdTooLongError, em.InvalidIdTermError):
        return None


def _employee_or_404(id: str, **options: Any) -> Employee:
    employee = _load(Employee, id, **options)
    if employee is None:
        abort(404)
    return employee  # type: ignore[no-any-return]


def _search(model: type[Any], filter: str | None, **kwargs: Any) -> em.FindResults[Any]:
    """``session.find`` without the refresh that the session's ``consistency="wait"`` would
    send before each search: the writes already waited for it."""
    return session.find(model, filter, consistency="eventual", **kwargs)


def _team_names() -> dict[str, str]:
    company = current_app.config["COMPANY_ID"]
    teams = _search(Team, f"company_id:{escape_query_value(company)}", sort="name", limit=100)
    return {team.slug: team.name for team in teams}


@attrs.frozen
class QueryProblem:
    """An invalid list request, as shown above the table."""

    message: str
    source: str  # "filter", "sort" or "paging"
    field: str | None = None
    position: int | None = None
    expression: str | None = None
    hint: str = ""  # what to do about it, shown below the expression

    @classmethod
    def from_error(
        cls, exc: em.QueryValidationError, *, sort: str = "", user_sort: str = ""
    ) -> QueryProblem:
        """The problem of ``exc``; ``sort`` is the sort sent (``user_sort`` plus the id
        tiebreaker), ``user_sort`` the one shown (the tiebreaker is internal). The message
        leaves out the position the box shows after it (with a caret under it)."""
        message = _without_position(str(exc), exc.position)
        if exc.field == SOFT_DELETE_FIELD:
            return cls(DELETED_FILTER_MESSAGE, "filter", exc.field)
        if exc.expression is None:
            return cls(message, "paging", exc.field, exc.position, exc.expression)
        if exc.expression == sort:
            position = exc.position
            if position is not None and position > len(user_sort):
                position = None  # cannot happen for a valid tiebreaker; never point past it
            return cls(message, "sort", exc.field, position, user_sort or sort)
        return cls(message, "filter", exc.field, exc.position, exc.expression)

    def with_hint(self, hint: str) -> QueryProblem:
        """This problem with ``hint``, what to do about it."""
        return attrs.evolve(self, hint=hint)


def _without_position(message: str, position: int | None) -> str:
    """``message`` without its own "at position N" (the box says it once)."""
    if position is None:
        return message
    return re.sub(rf"\s*\bat position {position}\b", "", message)


@attrs.define
class Listing:
    """The list parameters of a request (``q``, ``sort``, ``page``, ``limit``) and the URLs
    that change them."""

    endpoint: str
    q: str = ""
    sort: str = ""
    page: int = 1
    limit: int = 10
    default_sort: str = ""
    team: str = ""  # a team's list: its custom fields can be filtered and sorted by

    @classmethod
    def from_request(cls, endpoint: str, default_sort: str) -> Listing:
        default_limit = int(current_app.config["PAGE_SIZE"])
        return cls(
            endpoint,
            q=(request.args.get("q") or "").strip(),
            sort=(request.args.get("sort") or "").strip() or default_sort,
            page=_int_arg("page", 1),
            limit=min(max(_int_arg("limit", default_limit), 1), MAX_PAGE_SIZE),
            default_sort=default_sort,
            team=(request.args.get("team") or "").strip(),
        )

    def url(self, **changes: Any) -> str:
        """This list's URL with ``changes`` (defaults left out)."""
        args: dict[str, Any] = {
            "q": self.q,
            "sort": self.sort,
            "page": self.page,
            "limit": self.limit,
            "team": self.team,
        }
        args.update(changes)
        defaults: dict[str, Any] = {
            "q": "",
            "sort": self.default_sort,
            "page": 1,
            "limit": current_app.config["PAGE_SIZE"],
            "team": "",
        }
        return url_for(self.endpoint, **{k: v for k, v in args.items() if v != defaults[k]})

    def sort_url(self, field: str) -> str:
        """Sort on ``field``: ascending first, descending when it already sorts ascending."""
        return self.url(sort=f"-{field}" if self.sort == field else field, page=1)

    def sort_mark(self, field: str) -> str:
        if self.sort == field:
            return "▲"
        if self.sort == f"-{field}":
            return "▼"
        return ""


def _int_arg(name: str, default: int) -> int:
    raw = (request.args.get(name) or "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise em.QueryValidationError(
            f"{name} must be a whole number, got {raw!r}", field=name
        ) from None


@attrs.frozen
class Pager:
    """Page links: ``numbers`` holds page numbers and ``None`` for a gap."""

    page: int
    last: int
    has_more: bool
    numbers: list[int | None]

    @classmethod
    def of(cls, results: em.FindResults[Any], limit: int) -> Pager:
        last = max(1, math.ceil(results.total / limit))
        last = min(last, max(1, RESULT_WINDOW // limit))
        page = results.page
        shown = sorted({1, last, *range(max(1, page - 2), min(last, page + 2) + 1)})
        numbers: list[int | None] = []
        for number in shown:
            if numbers and number - (numbers[-1] or 0) > 1:
                numbers.append(None)
            numbers.append(number)
        return cls(page, last, results.has_more, numbers)


def _list(
    model: type[Any],
    listing: Listing,
    template: str,
    *,
    options: dict[str, Any] | None = None,
    explain: Any = None,
    **context: Any,
) -> tuple[str, int]:
    """Run the search of ``listing`` (with ``options``, e.g. ``soft_deletes``) and render
    ``template`` with ``context``; 400 with the problem for an invalid request
    (``explain(problem)`` may add what to do about it)."""
    sort = f"{listing.sort} id"  # the id breaks ties: stable pages
    try:
        results = _search(
            model,
            listing.q or None,
            sort=sort,
            limit=listing.limit,
            page=listing.page,
            **(options or {}),
        )
    except em.QueryValidationError as exc:
        problem = QueryProblem.from_error(exc, sort=sort, user_sort=listing.sort)
        if explain is not None:
            problem = explain(problem)
        return _invalid_list(template, listing, problem, **context)
    pager = Pager.of(results, listing.limit)
    past_end = not results.documents and results.total > 0  # e.g. ?page=9 of 4
    html = render_template(
        template, listing=listing, results=results, pager=pager, past_end=past_end, **context
    )
    return html, 200


def _invalid_list(
    template: str, listing: Listing, problem: QueryProblem, **context: Any
) -> tuple[str, int]:
    """The list page showing ``problem`` instead of results (400)."""
    html = render_template(template, listing=listing, problem=problem, results=None, **context)
    return html, 400


# -- error pages -------------------------------------------------------------------------


def _query_error_page(exc: em.QueryValidationError) -> tuple[str, int]:
    problem = QueryProblem.from_error(exc)
    return render_template("error.html", title="Invalid request", problem=problem), 400


def _conflict_error_page(exc: em.VersionConflictError) -> tuple[str, int]:
    message = "The document was changed by someone else in the meantime; reload and retry."
    return render_template("error.html", title="Version conflict", message=message), 409


def _not_found_page(exc: Exception) -> tuple[str, int]:
    message = (
        "There is no such page or employee: the address may be mistyped, or the employee "
        "was deleted for good."
    )
    return render_template("error.html", title="Not found", message=message), 404


def _not_allowed_page(exc: Exception) -> tuple[str, int]:
    message = "This address does not accept that kind of request; use the app's links."
    return render_template("error.html", title="Not allowed", message=message), 405


# -- employees ---------------------------------------------------------------------------


@bp.get("/")
def index() -> Response:
    return _see_other(".list_employees")


@bp.get("/employees")
def list_employees() -> tuple[str, int]:
    """The directory: filter box, sortable columns, pages. With ``?team=<slug>``: that
    team's members, searched with ``tenant=<slug>`` so the team's custom fields can be
    filtered and sorted by (one column each)."""
    listing = Listing.from_request(".list_employees", DEFAULT_SORT)
    teams = _team_names()
    if listing.team and listing.team not in teams and not _team_exists(listing.team):
        problem = QueryProblem(
            f"There is no team {listing.team!r}. Pick a team in the list, or All teams.",
            "team",
        )
        page = {"columns": SORT_COLUMNS, "custom": [], "teams": teams}
        return _invalid_list("employees/list.html", listing, problem, **page)
    custom = team_fields(listing.team)
    columns = SORT_COLUMNS + tuple((d.name, d.name) for d in custom)
    options = {"tenant": listing.team} if listing.team else None

    def explain(problem: QueryProblem) -> QueryProblem:
        """An unknown field that is a team's custom field, searched without a team: say
        which team to pick (a team's fields are searched within that team only)."""
        if listing.team or problem.field is None or not problem.message.startswith("Unknown"):
            return problem
        owners = _teams_with_field(problem.field, teams)
        if not owners:
            return problem
        return problem.with_hint(
            f"{problem.field!r} is a custom field of {_or_list(owners)}: pick "
            f"{'that team' if len(owners) == 1 else 'one of these teams'} in the list to "
            "filter or sort by it."
        )

    return _list(
        Employee,
        listing,
        "employees/list.html",
        options=options,
        explain=explain,
        columns=columns,
        custom=custom,
        teams=teams,
    )


def _team_exists(slug: str) -> bool:
    """Whether the company has a team ``slug`` (beyond the first 100 listed by name)."""
    key = Team(company_id=current_app.config["COMPANY_ID"], slug=slug)
    try:
        return _load(Team, current_mapper.repository(Team).compose_id(key)) is not None
    except (em.DocumentValidationError, em.IdTooLongError, em.InvalidIdTermError):  # no slug
        return False


def _teams_with_field(name: str, teams: dict[str, str]) -> list[str]:
    """The names of the teams having a custom field called ``name`` (any case)."""
    wanted = name.lower()
    return [
        team
        for slug, team in teams.items()
        if any(d.name.lower() == wanted for d in team_fields(slug))
    ]


def _or_list(names: Iterable[str]) -> str:
    """``A``, ``A or B``, ``A, B or C``."""
    listed = list(names)
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


@bp.route("/employees/new", methods=["GET", "POST"])
def new_employee() -> Response | tuple[str, int]:
    """The creation form; a valid submission adds the employee and shows it."""
    values: dict[str, str] = {"age": "30", "team": (request.args.get("team") or "").strip()}
    errors: Errors = {}
    if request.method == "POST":
        values = read_form(request.form, EMPLOYEE_FORM)
        employee = Employee()
        errors = apply_employee(employee, values)
        custom = team_fields(values.get("team"))
        values.update(read_form(request.form, custom_form_names(custom)))
        errors.update(apply_custom(employee, values, custom))
        if not errors:
            session.add(employee)
            try:
                session.flush()  # validate() and the write happen here: show their errors
            except (em.DocumentValidationError, em.DuplicateDocumentError) as exc:
                session.expunge(employee)
                errors = error_for(exc)
        if not errors:
            flash(f"{employee.name} was added.")
            return _see_other(".show_employee", id=employee.id)
    status = 400 if errors else 200
    return _form_page(values, errors, employee=None, version=None), status


@bp.get("/employees/<id>")
def show_employee(id: str) -> tuple[str, int]:
    """One employee; a soft-deleted one is shown with a banner and a restore button."""
    employee = _load(Employee, id) or _employee_or_404(id, soft_deletes="deleted")
    team = None
    if employee.team:
        key = Team(company_id=current_app.config["COMPANY_ID"], slug=employee.team)
        team = _load(Team, current_mapper.repository(Team).compose_id(key))
    custom = team_fields(employee.team)
    shown = render_template(
        "employees/show.html",
        employee=employee,
        team=team,
        custom=custom,
        custom_values=custom_values(employee, custom),
    )
    return shown, 200


@bp.route("/employees/<id>/edit", methods=["GET", "POST"])
def edit_employee(id: str) -> Response | tuple[str, int]:
    """The edit form. It carries the ``version`` it shows; a save made over another version
    is refused with the current values (409), whether the change is seen before writing or
    by Elasticsearch's version check during the write."""
    found = _load(Employee, id)
    if request.method == "GET":
        if found is None:
            deleted = _employee_or_404(id, soft_deletes="deleted")
            flash(f"{deleted.name} is in the recycle bin: restore it to edit it.", "error")
            return _see_other(".show_employee", id=id)
        employee: Employee = found
        values = employee_values(employee) | custom_values(employee, team_fields(employee.team))
        return _form_page(values, {}, employee=employee, version=employee.version), 200

    values = read_form(request.form, EMPLOYEE_FORM)
    custom = team_fields(values.get("team"))
    values.update(read_form(request.form, custom_form_names(custom)))
    seen_version = request.form.get("version", "")
    if found is None:
        # Deleted since the form was opened (in another tab, by someone else): say so and
        # offer to restore it with these changes, or to create it again from them.
        deleted = _load(Employee, id, soft_deletes="deleted", cache=False)
        if deleted is None or request.form.get("restore") != "1":
            return _gone_page(id, deleted, values)
        deleted.is_deleted = False
        employee = deleted
    else:
        employee = found
    if seen_version != employee.version:
        return _conflict_page(employee, values)
    errors = apply_employee(employee, values)
    errors.update(apply_custom(employee, values, custom))
    if not errors:
        try:
            session.flush()
        except em.VersionConflictError:
            # Written by someone else between our read and our write: show their version.
            session.rollback()
            session.expunge(employee)
            current = _load(Employee, id, cache=False, soft_deletes="all")
            if current is None or current.is_deleted:
                return _gone_page(id, current, values)
            return _conflict_page(current, values)
        except em.DocumentValidationError as exc:
            errors = error_for(exc)
    if errors:
        session.rollback()
        return _form_page(values, errors, employee=employee, version=seen_version), 400
    flash(f"{employee.name} was saved.")
    return _see_other(".show_employee", id=id)


def _form_page(
    values: dict[str, str], errors: Errors, *, employee: Employee | None, version: str | None
) -> str:
    return render_template(
        "employees/form.html",
        values=values,
        errors=errors,
        employee=employee,
        version=version,
        teams=_team_names(),
        custom=team_fields(values.get("team")),
    )


def _conflict_page(current: Employee, submitted: dict[str, str]) -> tuple[str, int]:
    """409: someone else saved ``current`` since the form was loaded; show both versions
    (highlighting the fields where *your* edit differs from the current version) and a form
    with the current values and version."""
    custom = team_fields(current.team)
    current_values = employee_values(current) | custom_values(current, custom)
    yours = _as_stored(submitted)
    changed = {k for k, v in yours.items() if current_values.get(k, "") != v}
    teams = _team_names()
    labels = LABELS | {f"cf.{d.name}": d.name for d in custom}
    rows = [name for name in (*EMPLOYEE_FORM, *custom_form_names(custom))]

    def shown(name: str, value: str) -> str:
        return teams.get(value, value) if name == "team" else value

    html = render_template(
        "employees/conflict.html",
        employee=current,
        current={k: shown(k, v) for k, v in current_values.items()},
        submitted={k: shown(k, v) for k, v in submitted.items()},
        changed=changed,
        fields=rows,
        labels=labels,
        values=current_values,
        errors={},
        version=current.version,
        teams=teams,
        custom=custom,
    )
    return html, 409


def _as_stored(submitted: dict[str, str]) -> dict[str, str]:
    """The submitted form values as they would be stored then shown again (``python,go``
    is ``python, go``, ``041`` is ``41``): only real differences count as changes. A value
    the model refuses is kept as typed."""
    probe = Employee()
    custom = team_fields(submitted.get("team"))
    errors = apply_employee(probe, submitted)
    errors.update(apply_custom(probe, submitted, custom))
    stored = employee_values(probe) | custom_values(probe, custom)
    return {k: (v if k in errors or k not in stored else stored[k]) for k, v in submitted.items()}


def _gone_page(id: str, deleted: Employee | None, submitted: dict[str, str]) -> tuple[str, int]:
    """An edit saved after the employee was deleted: explain, and offer to restore it with
    the edit (soft-deleted: 409) or to create it again from the edit (deleted for good:
    410). Nothing is written by this page."""
    html = render_template(
        "employees/gone.html",
        id=id,
        deleted=deleted,
        submitted=submitted,
        team_name=_team_names().get(submitted.get("team", ""), submitted.get("team", "")),
    )
    return html, 409 if deleted is not None else 410


@bp.post("/employees/<id>/delete")
def delete_employee(id: str) -> Response:
    """Soft delete: the employee moves to the recycle bin (``is_deleted = True``)."""
    employee = _employee_or_404(id)
    employee.is_deleted = True
    try:
        session.flush()
    except em.VersionConflictError:
        session.rollback()
        flash(f"{employee.name} was changed in the meantime; nothing was deleted.", "error")
        return _see_other(".show_employee", id=id)
    flash(f"{employee.name} was moved to the recycle bin.")
    return _see_other(".list_employees")


# -- recycle bin -------------------------------------------------------------------------


@bp.get("/trash")
def trash() -> tuple[str, int]:
    """The soft-deleted employees, most recently deleted first."""
    listing = Listing.from_request(".trash", "-updated_utc")
    return _list(Employee, listing, "trash.html", options={"soft_deletes": "deleted"})


@bp.post("/trash/<id>/restore")
def restore_employee(id: str) -> Response:
    employee = _employee_or_404(id, soft_deletes="deleted")
    employee.is_deleted = False
    session.flush()
    flash(f"{employee.name} was restored.")
    return _see_other(".trash")


@bp.route("/trash/<id>/purge", methods=["GET", "POST"])
def purge_employee(id: str) -> Response | tuple[str, int]:
    """Hard delete of one employee of the recycle bin; GET asks for confirmation."""
    employee = _employee_or_404(id, soft_deletes="deleted")
    if request.method == "GET":
        return render_template("confirm.html", employee=employee, count=None), 200
    session.remove(employee)
    session.flush()
    flash(f"{employee.name} was deleted for good.")
    return _see_other(".trash")


@bp.route("/trash/empty", methods=["GET", "POST"])
def empty_trash() -> Response | tuple[str, int]:
    """Hard delete of every soft-deleted employee (one delete-by-query, not the session);
    GET asks for confirmation."""
    if request.method == "GET":
        count = current_mapper.repository(Employee).count(soft_deletes="deleted")
        return render_template("confirm.html", employee=None, count=count), 200
    removed = current_mapper.repository(Employee).remove_all(
        None, soft_deletes="deleted", consistency="wait"
    )
    flash(f"The recycle bin was emptied ({removed} employee(s) deleted for good).")
    return _see_other(".trash")


# -- teams -------------------------------------------------------------------------------


@bp.route("/teams", methods=["GET", "POST"])
def teams() -> Response | tuple[str, int]:
    """The company's teams with their head counts, and a form to add one."""
    company = current_app.config["COMPANY_ID"]
    values: dict[str, str] = {}
    errors: Errors = {}
    if request.method == "POST":
        values = read_form(request.form, TEAM_FIELDS)
        team = Team(company_id=company)
        errors = apply_team(team, values)
        if not errors:
            session.add(team)  # its id is composed from (company_id, slug)
            try:
                session.flush()
            except em.DuplicateDocumentError:
                errors = {"slug": f"The team {team.slug!r} already exists."}
            except em.DocumentValidationError as exc:
                errors = error_for(exc)
            except em.IdTooLongError:
                errors = {"slug": "The slug is too long."}
            if errors:
                session.expunge(team)
        if not errors:
            flash(f"The team {team.name} was added.")
            return _see_other(".teams")
    found = _search(Team, f"company_id:{escape_query_value(company)}", sort="name", limit=100)
    # Head counts: one terms aggregation over the (active) employees.
    counts = current_mapper.repository(Employee).aggregate(aggregations="terms:team~100")
    by_team = counts.terms("terms_team")
    head_counts = {b.key: b.total for b in by_team.buckets} if by_team else {}
    html = render_template(
        "teams.html", teams=found, head_counts=head_counts, values=values, errors=errors
    )
    return html, 400 if errors else 200
