"""The detect-secrets layer of redaction: Yelp's maintained detector over what the patterns left. Its
format plugins scan the whole text, its keyword detector and high-entropy plugins the lines that name a
secret, and its false-positive filters judge what they find. detect-secrets is imported when the first
text is scanned (a few hundred milliseconds), its plugins built once."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping

from mcp_memory.redaction.patterns import MARKED, bare_secret, filler, marker, placeholder

# The format plugins scan the whole text at once (their patterns start with a literal prefix, so `re`
# skips to it), some only when the text holds what they need; these four, slow over a long text and
# all about a value assigned to a key, a password or a token, scan only the lines that name one.
_LINE_PLUGINS = frozenset(
    {"CloudantDetector", "IbmCloudIamDetector", "IbmCosHmacDetector", "SoftlayerDetector"}
)
_GATES = {
    "ArtifactoryDetector": re.compile(r"AKC|AP[\dA-F]"),
    "AWSKeyDetector": re.compile(r"AKIA|ASIA|ABIA|ACCA|A3T|(?i:aws.{0,20}?(?:key|pw|pass|token))"),
    "MailchimpDetector": re.compile(r"-us\d"),
    "TelegramBotTokenDetector": re.compile(r":[0-9A-Za-z_-]{35}"),
}
# Not used: a public IP address is not a credential; the keyword and entropy plugins run apart, below.
_SKIPPED_PLUGINS = frozenset(
    {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString"}
)
# A line that names a secret (lowercased, holds one of these): the keyword detector and the line plugins
# look at it. A substring test on the lowered line: many times faster than a regular expression alternation.
_SECRET_WORDS = ("key", "pw", "pass", "token", "secret", "contrase", "auth", "credential")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_-]{24}")
# High-entropy strings count only on a line that names a secret: elsewhere they are hashes and ids.
_ENTROPY_LINE = re.compile(r"secret|passw|pwd|token|api.?key|access.?key|private.?key|credential|auth", re.I)

# detect-secrets' secret types, as marker kinds; others are slugged (`Foo Bar Key` -> foo_bar_key).
_KINDS = {
    "AWS Access Key": "aws_access_key",
    "Azure Storage Account access key": "azure_key",
    "Basic Auth Credentials": "url_password",
    "JSON Web Token": "jwt",
    "Secret Keyword": "secret",
    "Base64 High Entropy String": "high_entropy_string",
    "Hex High Entropy String": "high_entropy_string",
    "OpenAI Token": "openai_api_key",
    "Stripe Access Key": "stripe_key",
    "Private Key": "private_key",
}


def _kind_of(secret_type: str) -> str:
    return _KINDS.get(secret_type) or re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")[:40]


MIN_SECRET_CHARS = 8


class _Detector:
    """detect-secrets' plugins, built once, used without its global settings (nothing is configured,
    so calls from several threads do not interfere), with its own false-positive filters."""

    def __init__(self) -> None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins import keyword
        from detect_secrets.plugins.base import BasePlugin
        from detect_secrets.plugins.high_entropy_strings import (
            Base64HighEntropyString,
            HexHighEntropyString,
        )
        from detect_secrets.plugins.keyword import KeywordDetector

        classes: list[type[BasePlugin]] = list(get_mapping_from_secret_type_to_class().values())
        plugins = [cls() for cls in classes if cls.__name__ not in _SKIPPED_PLUGINS]
        self.whole = [
            (p, _GATES.get(type(p).__name__)) for p in plugins if type(p).__name__ not in _LINE_PLUGINS
        ]
        self.by_line = [p for p in plugins if type(p).__name__ in _LINE_PLUGINS]
        self.keyword = KeywordDetector()
        self.keyword_names = re.compile("|".join(keyword.DENYLIST))  # of a lowercased line
        self.entropy = [Base64HighEntropyString(limit=4.5), HexHighEntropyString(limit=3.0)]
        self.h = heuristic

    def scan(self, text: str, found: set[str]) -> str:
        secrets: dict[str, str] = {}  # each secret value, with its kind
        for plugin, gate in self.whole:
            if gate is None or gate.search(text):
                for value in plugin.analyze_string(text):
                    secrets.setdefault(value, _kind_of(plugin.secret_type))
        for line in text.split("\n"):
            lower = line.lower()
            if any(word in lower for word in _SECRET_WORDS):
                self._scan_line(line, lower, secrets)
        kept = {value: kind for value, kind in secrets.items() if value and self._kept(value)}
        found.update(kept.values())
        return _replace_values(text, kept) if kept else text

    def _scan_line(self, line: str, lower: str, secrets: dict[str, str]) -> None:
        if _LONG_TOKEN.search(line):  # each of these plugins' secrets is 24 characters or more
            for plugin in self.by_line:
                for value in plugin.analyze_string(line):
                    secrets.setdefault(value, _kind_of(plugin.secret_type))
        if self.keyword_names.search(lower):
            # Quoted values (the rules for code), then bare ones (for config files) that look like secrets.
            named = {str(s.secret_value) for s in self.keyword.analyze_line(filename="message.py", line=line)}
            named |= {
                str(s.secret_value)
                for s in self.keyword.analyze_line(filename="message.yaml", line=line)
                if bare_secret(str(s.secret_value))
            }
            # Not `password = get_password()`; checked last, its pattern is slow on a long line.
            if named and not self.h.is_indirect_reference(line):
                for value in named:
                    secrets.setdefault(value, "secret")
        if _ENTROPY_LINE.search(line) and ('"' in line or "'" in line):
            for plugin in self.entropy:
                for s in plugin.analyze_line(filename="message", line=line):
                    value = str(s.secret_value)
                    if not self.h.is_likely_id_string(value, line, plugin):
                        secrets.setdefault(value, "high_entropy_string")

    def _kept(self, value: str) -> bool:
        """detect-secrets' own false-positive filters, and ours: what was redacted already is not a secret."""
        h = self.h
        return not (
            MARKED in value
            or placeholder(value)  # YOUR_API_KEY, process.env.API_KEY, ${TOKEN}: names, not secrets
            or filler(value)  # ghp_xxxx...: a token's shape filled in by hand
            or len(value) < MIN_SECRET_CHARS  # a plugin's capture of a prefix alone (GitHub's "ghp")
            or h.is_sequential_string(value)
            or h.is_potential_uuid(value)
            or h.is_templated_secret(value)
            or h.is_prefixed_with_dollar_sign(value)
            or h.is_not_alphanumeric_string(value)
        )


def _replace_values(text: str, secrets: Mapping[str, str]) -> str:
    """Each value replaced where it stands as a word of its own (not inside a longer one); anywhere
    when it never does."""
    for value in sorted(secrets, key=len, reverse=True):
        before = r"(?<![A-Za-z0-9])" if value[0].isalnum() else ""
        after = r"(?![A-Za-z0-9])" if value[-1].isalnum() else ""
        bounded = re.compile(before + re.escape(value) + after)
        replacement = marker(secrets[value])  # no backslash: safe as a re.sub template
        text, count = bounded.subn(replacement, text)
        if not count and not value[0].isdigit():  # digits inside a longer number: an id (an ARN), not this
            text = text.replace(value, replacement)
    return text


_detector_lock = threading.Lock()
_built: list[_Detector] = []


def loaded() -> bool:
    """Whether detect-secrets is loaded: the first redact() imports it (a few hundred milliseconds)."""
    return bool(_built)


def detector() -> _Detector:
    if not _built:
        with _detector_lock:
            if not _built:
                _built.append(_Detector())
    return _built[0]
