"""Sample data for the directory: a few teams and ``n`` employees, the same for a given seed.

The teams ``platform`` and ``support`` get custom fields (``Level``, ``OnCall``;
``Shift``) and their members values for them. ``load(mapper, n=40)`` writes the employees
through one session (one commit: bulk requests), with
``consistency="wait"`` so they are searchable when it returns. Teams that already exist are
kept; employees are always added (with fresh ids).
"""

from __future__ import annotations

import random

from esmapper.custom_fields import CustomFieldDefinition
from esmapper.mapper import Mapper
from examples.webapp.models import DEFAULT_COMPANY, Address, Employee, Team

__all__ = ["CUSTOM_FIELDS", "TEAMS", "employees", "load", "teams"]

#: ``(slug, name, description)`` of the sample teams.
TEAMS: tuple[tuple[str, str, str], ...] = (
    ("platform", "Platform", "Builds the internal platform and tooling."),
    ("data-eng", "Data Engineering", "Pipelines, warehouse and reporting."),
    ("mobile", "Mobile", "The iOS and Android apps."),
    ("support", "Customer Support", "Helps customers, day and night."),
)

_FIRST = (
    "Ada", "Alan", "Grace", "Linus", "Margaret", "Dennis", "Barbara", "Ken", "Frances",
    "Edsger", "Radia", "Donald", "Hedy", "Tim", "Katherine", "Guido", "Sophie", "John",
)  # fmt: skip
_LAST = (
    "Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Ritchie", "Liskov", "Thompson",
    "Allen", "Dijkstra", "Perlman", "Knuth", "Lamarr", "Berners-Lee", "Johnson", "Wilson",
)  # fmt: skip
_TITLES = (
    "Software Engineer", "Senior Software Engineer", "Engineering Manager", "Data Analyst",
    "Product Designer", "Support Specialist", "Site Reliability Engineer", "QA Engineer",
)  # fmt: skip
_DEPARTMENTS = ("Engineering", "Product", "Operations", "Support")
_SKILLS = ("python", "go", "sql", "kotlin", "swift", "elasticsearch", "kubernetes", "design")
_PLACES = (
    ("Lyon", "69002", "FR"), ("Berlin", "10115", "DE"), ("Lisbon", "1100-148", "PT"),
    ("Montreal", "H2X 1Y4", "CA"), ("Oslo", "0150", "NO"), ("Austin", "78701", "US"),
)  # fmt: skip
_STREETS = ("Main Street", "Station Road", "Rue de la Paix", "Hauptstrasse", "Rua Augusta")
#: Per-team custom fields (``(team, name, type)``) and how sample values are made.
CUSTOM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("platform", "Level", "int"),
    ("platform", "OnCall", "bool"),
    ("support", "Shift", "keyword"),
)


def _custom_values(team: str, rng: random.Random) -> dict[str, object] | None:
    if team == "platform":
        return {"Level": rng.randint(1, 5), "OnCall": rng.random() < 0.3}
    if team == "support":
        return {"Shift": rng.choice(("day", "night", "weekend"))}
    return None


def teams(company_id: str = DEFAULT_COMPANY) -> list[Team]:
    """The sample teams of ``company_id`` (not stored)."""
    return [
        Team(company_id=company_id, slug=slug, name=name, description=description)
        for slug, name, description in TEAMS
    ]


def employees(n: int, *, seed: int = 7) -> list[Employee]:
    """``n`` sample employees (not stored), the same ones for the same ``seed``."""
    rng = random.Random(seed)
    people = []
    for i in range(n):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        city, postcode, country = rng.choice(_PLACES)
        team = rng.choice(TEAMS)[0]
        people.append(
            Employee(
                name=f"{first} {last}",
                email=f"{first}.{last}.{i}@example.com".lower(),
                title=rng.choice(_TITLES),
                department=rng.choice(_DEPARTMENTS),
                team=team,
                custom_fields=_custom_values(team, rng),
                age=rng.randint(21, 64),
                skills=sorted(rng.sample(_SKILLS, rng.randint(1, 3))),
                address=Address(
                    street=f"{rng.randint(1, 120)} {rng.choice(_STREETS)}",
                    city=city,
                    postcode=postcode,
                    country=country,
                ),
            )
        )
    return people


def load(
    mapper: Mapper, n: int = 40, *, seed: int = 7, company_id: str = DEFAULT_COMPANY
) -> list[Employee]:
    """Store the sample teams (those missing), their custom fields and ``n`` employees;
    returns the employees.

    The indexes must exist (``mapper.configure_indexes()`` or ``mapper.migrate()``).
    """
    mapper.custom_fields(Employee).add(  # fields that exist already are kept as they are
        [
            CustomFieldDefinition(tenant_key=team, name=name, index_type=kind)
            for team, name, kind in CUSTOM_FIELDS
        ]
    )
    people = employees(n, seed=seed)
    wanted = teams(company_id)
    with mapper.session(consistency="wait") as session:
        # A team's id is composed from its id_fields; compute it to skip the existing ones.
        repo = mapper.repository(Team)
        ids = [repo.compose_id(team) for team in wanted]
        existing = {team.id for team in session.get_many(Team, ids)}
        for team, team_id in zip(wanted, ids, strict=True):
            if team_id not in existing:
                session.add(team)
        for person in people:
            session.add(person)
    return people
