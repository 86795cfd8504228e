"""A fictional company toolbox: thirty tools an agent is handed and the weekly report never needs.

Notebook 16's tool-schema tax at the size it takes in practice: an agent wired to a whole toolbox —
as a connector or an MCP server hands one over — sends every schema on every call. ``toolbox()``
gives the tools; :class:`Toolbox` is a middleware that adds them to any agent. The companies and
systems are fictional. What it leaves out: doing anything — called, a tool says it is not part
of the lab; the lab model never calls one.
"""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import StructuredTool

__all__ = ["TOOLBOX", "Toolbox", "toolbox"]

# one tool a line: "system action | what it does | its parameters"; each schema is written from these
_TABLE = """
crm search_accounts | Search customer accounts by name, industry, owner, region | query region owner limit
crm get_account | Read one customer account with its contacts, deals and notes | account_id include_notes
crm update_account | Change fields of a customer account and log who changed them | account_id fields reason
crm list_deals | List deals in a pipeline stage, with amounts and dates | stage owner closing_before limit
calendar list_events | List calendar events of a person or a room between two dates | calendar_id start end
calendar create_event | Create a calendar event and invite people to it | title start end attendees location
tickets search | Search support tickets by text, status, priority or customer | query status priority customer
tickets create | Open a support ticket for a customer, with a priority | customer summary priority owner
tickets comment | Add a comment to a support ticket, public or internal | ticket_id text internal
wiki search | Search the internal wiki's pages by text and space | query space limit
wiki get_page | Read one wiki page as Markdown, with its history if asked | page_id include_history
drive search | Search shared-drive files by name, owner, type or date | query owner file_type modified_after
drive get_file | Read the text of one shared-drive file | file_id max_chars
email search | Search the mailbox by sender, subject, text or date | query sender after limit
email send | Send an email on the user's behalf, with drive attachments | to subject body attachments
chat search_messages | Search team chat messages by channel, author or text | query channel author limit
chat post_message | Post a message to a team chat channel or thread | channel text thread_id
hr lookup_employee | Look up an employee's team, manager, location and working hours | name_or_email
finance get_invoice | Read one invoice with its lines, taxes and payment status | invoice_id
finance list_payments | List payments received or made between two dates | direction start end limit
issues search | Search engineering issues by text, label, assignee or state | query labels assignee state
issues create | Create an engineering issue with a description and labels | title description labels assignee
code search | Search the company's code repositories for text or a symbol | query repository language
code open_pull_request | Open a pull request from a branch | repository branch title description
analytics run_query | Run a read-only SQL query on the analytics warehouse | sql max_rows
analytics list_dashboards | List analytics dashboards by owner or topic | owner topic
text translate | Translate text between languages, keeping formatting | text source_language target_language
web search | Search the public web and return titles, links and snippets | query limit recency_days
web fetch | Fetch a public web page and return its readable text | url max_chars
documents extract_text | Extract the text and tables of a PDF or office file | file_id pages
"""
TOOLBOX: tuple[tuple[str, str, str, tuple[str, ...]], ...] = tuple(
    (*head.split(), what, tuple(params.split()))
    for head, what, params in (line.split(" | ") for line in _TABLE.strip().splitlines()))
"""(system, action, what it does, its parameters) of each of the thirty tools."""


def _schema(params: tuple[str, ...]) -> dict:
    return {"type": "object", "required": list(params[:1]), "properties": {
        p: {"type": "string", "description": f"The {p.replace('_', ' ')} to use. Leave it out to use the "
                                             "system's default; dates are ISO 8601, lists comma-separated."}
        for p in params}}


def toolbox() -> list[StructuredTool]:
    """The thirty tools of :data:`TOOLBOX`, as an agent would be handed them. Notebook 16."""
    def refuse(**_: str) -> str:
        return "Error: this tool is a schema in the lab, not a system; the report needs the scenario's tools."

    return [StructuredTool(name=f"{system}_{action}", func=refuse, args_schema=_schema(params),
                           description=f"{what}. Part of the company's {system} connector: it acts with the "
                                       "user's permissions, returns JSON, and pages results over 50 items. "
                                       "Use it only for the system it names.")
            for system, action, what, params in TOOLBOX]


class Toolbox(AgentMiddleware):
    """Adds :func:`toolbox`'s thirty tools to an agent: ``middleware=[scenario.Toolbox()]``.
    Notebook 16 (the tool-schema tax)."""

    name = "labkit.Toolbox"

    def __init__(self) -> None:
        super().__init__()
        self.tools = toolbox()
