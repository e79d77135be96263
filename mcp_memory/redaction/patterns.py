"""The fast layer of redaction: regular expressions only (the standard library), so that a process that
must start in milliseconds (a hook) can use it. PEM and PuTTY private keys, JWTs, passwords in URLs and
connection strings, Authorization headers, the token formats of AWS, GitHub, GitLab, Slack, Stripe,
OpenAI, Anthropic, Google, Azure, npm, PyPI, SendGrid and Hugging Face, values assigned to
secret-sounding names (`password=...`), and <private> spans."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

PRIVATE_MARKER = "[private]"  # what a <private> span leaves
MARKED = "[redacted:"  # in a value: part of it was redacted already
MARKER = re.compile(r"\[redacted:([a-z0-9_]{1,40})\]|\[private\]")


def marker(kind: str) -> str:
    """What a credential of this kind leaves in the text."""
    return f"[redacted:{kind}]"


# ---- <private> spans ------------------------------------------------------------------------------

_PRIVATE = re.compile(r"<private\b[^>]*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL)

# ---- formats and assignments ----------------------------------------------------------------------

# A value assigned to one of these names is a secret: password=..., "api_key": "...", DB_PASSWORD=...
SECRET_NAME = (
    r"(?:passw(?:or)?d|passphrase|pwd|(?<=[_-])pass(?![a-z])|contrase(?:ñ|n)a|secret"
    r"|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?key|auth[_-]?key"
    r"|(?:access|auth|refresh|api|bearer|session)[_-]?token)"
)
PASSWORD_NAME = re.compile(r"pass|pwd|contrase", re.IGNORECASE)


@functools.cache
def _assigned() -> re.Pattern[str]:
    return re.compile(
        # The lookahead, on the names' first letters, lets `re` pass over most positions at once.
        r"(?=[pcsarb])(?P<name>" + SECRET_NAME + r")[A-Za-z0-9_-]{0,24}"
        r"""["'\]]{0,2}\s*(?:={1,3}|!==?|:=?|=>)\s*"""
        r"""(?:(?P<q>["'`])(?P<quoted>[^\s"'`]{3,300})(?P=q)|(?P<bare>[^\s"'`,;&)\]}>]{4,300}))""",
        re.IGNORECASE,
    )


_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_PLACEHOLDER_WORDS = frozenset({"none", "null", "nil", "true", "false", "undefined", "required", "optional"})
# A value of letters, "_" and "-" only that names what belongs there: YOUR_API_KEY, my_api_key,
# your-secret-key-here, xoxb-your-slack-token. Real credentials carry digits; a passphrase of words
# (correct-horse-battery-staple) names none of these.
_NAMES_A_SECRET = re.compile(
    r"(?:^|[_-])(?:your|my|here|example|placeholder|changeme|change|replace|insert|dummy|sample|fake|"
    r"redacted|xxx+|api|key|token|secret|password|passwd|pass|pwd)(?:$|[_-])",
    re.IGNORECASE,
)
_LETTERS_ONLY = re.compile(r"[A-Za-z_-]+")


_PREFIX = re.compile(r"^(?:[A-Za-z]{2,8}[_-])+")
FILLER_CHARS = 8  # a shorter value may repeat a letter and still be a password (p@ss)


def placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one: ${X}, {{x}}, <password>, ****, None."""
    value = value.rstrip(";,")
    return (
        not value
        or bool(_LETTERS_ONLY.fullmatch(value) and _NAMES_A_SECRET.search(value))
        or value[0] in "$%{<!&*[@(:"
        or value.lower() in _PLACEHOLDER_WORDS
        or set(value) <= set("*xX.-_#")
        or "(" in value  # a call: getpass(), os.getenv("X")
        or "[" in value  # an index: os.environ["X"]
        or bool(_DOTTED_NAME.fullmatch(value))  # a reference: settings.db_password
    )


def filler(value: str) -> bool:
    """A token's shape filled in by hand, not a token: ghp_xxxx..., AKIAXXXXXXXXXXXXXXXX, xoxp-...-####
    (x, X, * or # make half of what follows the prefix). Other repeated letters (AKIAZZZZ...) may be a key."""
    body = _PREFIX.sub("", value, count=1)
    chars = [c for c in body if c.isalnum() or c in "#*"]
    if len(chars) < FILLER_CHARS:
        return False
    return max(chars.count(c) for c in "xX*#") * 2 >= len(chars)


def _variable(word: str) -> bool:
    """A name in code (password, user_password), not a value: no digit in it."""
    return word.isidentifier() and not any(c.isdigit() for c in word)


def bare_secret(value: str) -> bool:
    """An unquoted value, as in .env and YAML: a word of letters only is prose ("password: required"),
    a path is a path (PWD=/home/ann); anything with a digit or a symbol is taken for a secret."""
    return not (
        placeholder(value)
        or value.isalpha()
        or _variable(value.rstrip(":;,)"))  # `if user.password_hash == password:`
        or any(c.isspace() for c in value)
        or value[0] in "/~."
        or value.startswith("http")
    )


class _Rule(NamedTuple):
    kind: str
    # The pattern's source and flags, compiled on first use (`re` keeps it): a hook that never meets a
    # rule's needle does not pay for compiling it.
    source: tuple[str, int]
    # The rule runs only on a text holding one of these (lowercase; the text is compared lowercased):
    # a substring test costs microseconds where a regular expression over 50,000 characters costs one.
    needles: tuple[str, ...]
    # A match right after a letter or digit is part of a longer word, not this credential.
    word_start: bool = True
    # Only a match whose replaced part holds a digit (a token, not a word: "sk-learn-examples-for-all").
    digit: bool = False
    # A replaced part that stands for a secret (${PASSWORD}, <password>, ****) is kept: see placeholder().
    placeholders: bool = False


def _rules() -> tuple[_Rule, ...]:
    # Each pattern starts with its literal prefix where it has one, so that `re` can skip to it. The
    # group "s", when a pattern has one, is what is replaced; otherwise the whole match.
    def c(pattern: str, flags: int = 0) -> tuple[str, int]:
        return pattern, flags

    return (
        _Rule(
            "private_key",
            c(
                r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
                r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
                re.DOTALL,
            ),
            ("private key",),
            word_start=False,
        ),
        _Rule(
            "private_key",
            c(r"PuTTY-User-Key-File-\d.*?(?:Private-MAC: *\S+|\Z)", re.DOTALL),
            ("putty-user-key-file",),
        ),
        _Rule("jwt", c(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), ("eyj",)),
        _Rule("jwt", c(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"), ("eyj",)),  # unsigned: header.payload
        # Discord bot tokens (detect-secrets' samples): id.timestamp.hmac
        _Rule(
            "discord_token",
            c(r"[A-Z][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])"),
            (".",),
            digit=True,
        ),
        # scheme://user:password@host (postgres, mysql, mongodb+srv, redis://:password@, amqp, https). The
        # password as people write it, unencoded: `#`, `?`, `/` and `@` in it too (up to the token's last
        # `@` before a host); not a port and a path (https://host:8080/users/@name).
        _Rule(
            "url_password",
            c(r"://[^\s:/?#@\"'<>]*:(?P<s>(?!\d+[/?#])[^\s\"'<>]+)@(?=[\w\[])"),
            ("://",),
            word_start=False,
            placeholders=True,
        ),
        # ADO.NET / ODBC / JDBC property strings: Server=...;User Id=sa;Password=...;
        _Rule(
            "password",
            c(r";\s*(?:password|pwd)\s*=\s*(?P<s>[^;\s\"'][^;\"'\n]*)", re.IGNORECASE),
            ("password", "pwd"),
            word_start=False,
        ),
        _Rule(
            "azure_key",
            c(r"(?:AccountKey|SharedAccessKey|SharedSecretValue)\s*=\s*(?P<s>[^;\s\"'<>]+)", re.IGNORECASE),
            ("accountkey", "sharedaccesskey", "sharedsecretvalue"),
        ),
        _Rule("azure_sas", c(r"[?&]sig=(?P<s>[A-Za-z0-9%+/=_-]{16,})"), ("sig=",), word_start=False),
        _Rule(
            "authorization",
            c(
                r"(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|bot)\s+)?"
                r"(?P<s>[^\s\"',;\[]{8,})",
                re.IGNORECASE,
            ),
            ("authorization",),
        ),
        _Rule(
            "bearer_token",
            c(r"bearer\s+(?P<s>[A-Za-z0-9\-._~+/]{16,}=*)", re.IGNORECASE),
            ("bearer",),
            digit=True,
        ),
        _Rule(
            "aws_access_key",
            c(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
            ("akia", "asia", "abia", "acca", "a3t"),
        ),
        _Rule(
            "aws_secret_key",
            c(
                r"aws.{0,30}?(?:secret|key).{0,20}?(?<![A-Za-z0-9/+])"
                r"(?P<s>(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40})"
                r"(?![A-Za-z0-9/+=])",
                re.IGNORECASE,
            ),
            ("aws",),
            word_start=False,
        ),
        _Rule(
            "github_token",
            c(r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"),
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        ),
        _Rule(
            "gitlab_token",
            c(r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}"),
            (
                "glpat-",
                "gldt-",
                "glft-",
                "glsoat-",
                "glrt-",
                "glcbt-",
                "glimt-",
                "glptt-",
                "glagent-",
                "gloas-",
            ),
        ),
        _Rule("slack_token", c(r"xox[abposre]-\d[A-Za-z0-9-]{9,}"), ("xox",)),
        _Rule(
            "slack_webhook",
            c(r"https?://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]+"),
            ("hooks.slack.com",),
        ),
        _Rule(
            "stripe_key",
            c(r"(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})(?![A-Za-z0-9])"),
            ("k_live_", "k_test_", "whsec_"),
        ),
        _Rule("anthropic_api_key", c(r"sk-ant-[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
        _Rule(
            "openai_api_key",
            c(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
            ("sk-",),
            digit=True,
        ),
        _Rule("google_api_key", c(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), ("aiza",)),
        _Rule("npm_token", c(r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), ("npm_",)),
        _Rule(
            "npm_token",
            c(r"_authToken\s*=\s*(?P<s>\S+)"),
            ("_authtoken",),
            word_start=False,
            placeholders=True,
        ),
        _Rule("pypi_token", c(r"pypi-AgE[A-Za-z0-9_-]{50,}"), ("pypi-",)),
        _Rule("sendgrid_key", c(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"), ("sg.",)),
        _Rule("huggingface_token", c(r"hf_[A-Za-z0-9]{34,}(?![A-Za-z0-9])"), ("hf_",)),
        # From gitleaks' rules (cmd/generate/config/rules/): tests/security/secret_corpus.json holds their samples.
        _Rule("onepassword_token", c(r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}"), ("ops_eyj",)),
        _Rule("aws_bedrock_key", c(r"ABSK[A-Za-z0-9+/]{109,269}={0,2}(?![A-Za-z0-9+/=])"), ("absk",)),
        _Rule(
            "azure_client_secret",
            c(r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])"),
            ("q~",),
            word_start=False,
        ),
        _Rule("facebook_token", c(r"EAA[MC][A-Za-z0-9]{100,}"), ("eaa",)),
        _Rule(
            "facebook_token", c(r"\b\d{15,16}(?:\||%7C)[0-9A-Za-z_-]{27,40}(?![0-9A-Za-z_-])"), ("|", "%7c")
        ),
        _Rule("notion_token", c(r"ntn_\d{11}[A-Za-z0-9]{35}(?![A-Za-z0-9])"), ("ntn_",)),
        _Rule(
            "sourcegraph_token",
            c(r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}(?![a-fA-F0-9])"),
            ("sgp_",),
        ),
        _Rule(
            "sourcegraph_token",
            c(r"sourcegraph\W{1,4}(?P<s>[a-fA-F0-9]{40})(?![a-fA-F0-9])", re.IGNORECASE),
            ("sourcegraph",),
        ),
        _Rule(
            "vault_token",
            c(r"(?:hv[sb]|[sb])\.[A-Za-z0-9_-]{24,}(?![A-Za-z0-9_-])"),
            ("s.", "b."),
            digit=True,
        ),
        _Rule("intra42_secret", c(r"s-s4t2(?:ud|af)-[a-f0-9]{64}(?![a-f0-9])"), ("s-s4t2",)),
        # curl's credentials: -u/--user user:password, and a header naming a token.
        _Rule(
            "password",
            c(
                r"(?:\s-u|--user)\s+[\"']?\{?(?P<u>[^\s:\"'{}]*)\}?[\"']?:[\"']?\{?"
                r"(?!(?P=u)(?:[\"'}\s]|$))(?P<s>[^\s\"'{}]{4,})"  # not user:user (test:test)
            ),
            ("-u", "--user"),
            word_start=False,
            placeholders=True,
        ),
        _Rule(  # an API key sent as the user name, with no password: -u "key:"
            "secret",
            c(r"(?:\s-u|--user)\s+[\"']?(?P<s>[^\s:\"'{}]{8,}):[\"']?(?:\s|$)"),
            ("-u", "--user"),
            word_start=False,
            placeholders=True,
            digit=True,
        ),
        _Rule(
            "secret",
            c(r"-H\s*[\"'][\w-]*(?:token|key|secret)[\w-]*:\s*(?P<s>[^\"'\s]{8,})", re.IGNORECASE),
            ("-h",),
            word_start=False,
            placeholders=True,
            digit=True,
        ),
    )


_RULES = _rules()
_ASSIGNED_NEEDLES = ("pass", "pwd", "secret", "key", "token", "contrase")


def _apply(rule: _Rule, text: str, found: set[str]) -> str:
    def replace(m: re.Match[str]) -> str:
        whole = m.group(0)
        if rule.word_start and m.start() > 0 and text[m.start() - 1].isalnum():
            return whole
        start, end = m.span("s") if "s" in m.re.groupindex else (-1, -1)
        if start < 0:  # the rule has no group "s": all of it
            start, end = m.span()
        value = text[start:end]
        if MARKED in value or (rule.digit and not any(ch.isdigit() for ch in value)):
            return whole
        if (rule.placeholders and placeholder(value)) or filler(value):
            return whole
        found.add(rule.kind)
        return whole[: start - m.start()] + marker(rule.kind) + whole[end - m.start() :]

    return re.compile(*rule.source).sub(replace, text)


def _replace_assigned(text: str, found: set[str]) -> str:
    def replace(m: re.Match[str]) -> str:
        group = "quoted" if m.group("quoted") is not None else "bare"
        value = m.group(group)
        if MARKED in value or (placeholder(value) if group == "quoted" else not bare_secret(value)):
            return m.group(0)
        if filler(value):
            return m.group(0)
        kind = "password" if PASSWORD_NAME.search(m.group("name")) else "secret"
        found.add(kind)
        start, end = m.span(group)
        whole = m.group(0)
        return whole[: start - m.start()] + marker(kind) + whole[end - m.start() :]

    # Line by line, and only the lines naming a secret: the pattern starts with an alternation, which
    # `re` tries at every position of the text.
    lines = text.split("\n")
    for index, line in enumerate(lines):
        lower = line.lower()
        if any(needle in lower for needle in _ASSIGNED_NEEDLES):
            lines[index] = _assigned().sub(replace, line)
    return "\n".join(lines)


def scrub(text: str, found: set[str]) -> str:
    """The text with <private> spans and what these patterns know replaced; the kinds added to `found`."""
    lower = text.lower()
    if "<private" in lower:
        text = _PRIVATE.sub(PRIVATE_MARKER, text)
        found.add("private")
    for rule in _RULES:
        if any(needle in lower for needle in rule.needles):
            text = _apply(rule, text, found)
    if any(needle in lower for needle in _ASSIGNED_NEEDLES):
        text = _replace_assigned(text, found)
    return text
