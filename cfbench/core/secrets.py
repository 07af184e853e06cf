r"""Keeping credentials out of everything cfbench writes (no imports from the rest of the package).

A careless or hostile server may echo the key: in an error body, a redirect, a
``\u``-escaped JSON string, a URL-encoded query, or the reply itself. The rules:

* :func:`scrub` reads a text as a human or a program could read it back before matching: every
  percent-escape (any case, ``%73%6b%2D``), ``\u``/``\U``/``\x``, octal (``\163``) and JSON escape and HTML
  character reference (``&#115;``, ``&#x6b;``, ``&hyphen;``) decoded, invisible characters dropped (controls
  such as NUL, soft hyphens, zero-width characters, bidi marks), compatibility forms folded (NFKC:
  full-width and mathematical letters), all repeatedly for double encodings (``%u0073`` too); every
  base64 run (also in groups of four with spaces between) and every hex run (``736b2d…``, ``0x73 0x6b``,
  ``{0x73, 0x6b}``, ``73:6b``, ``7 3 6 b``; of UTF-8, UTF-16 or UTF-32 bytes, the key forwards or reversed)
  decoded; and every base64 run (UTF-16 text, zlib, gzip, bzip2 or xz data too), hex run, base32 run (also in
  the extended hex alphabet), base85 and Ascii85 run, list of decimal or octal byte values (``115, 107, 45``;
  numbered or wrapped, ``115 (n=0), 107 (n=1)``, ``chr(115)+chr(107)``; dotted, ``115.107.45``), the bytes as
  one whole number in decimal, bytes written in binary, run of quoted-printable bytes (``=73=6B``) or CSS
  escapes (``\73 \6b``) and uuencoded block (or line with no header) decoded whole and read again as a text
  (so base64 of base64 is read too); all of this is also done on the whole text read backwards (so the
  key's base64, hex or any other of these spellings written backwards is found); the key is also looked for
  in hidden Unicode tag characters, reversed
  (also in another case), with its letters shifted by any number of places (ROT13 and every other Caesar
  shift) or the alphabet reversed (Atbash), in ROT47, in another case, spaced out (separators and the quotes of a
  list of its characters dropped) and with every character written twice; then any run of 8 or more
  consecutive characters of a credential (beyond its public prefix such as ``sk-proj-``) is replaced,
  in whatever spelling it had, *before* the text is clipped;
* :func:`echoed_credential` tells whether a text holds a credential; the judge runner
  then records the call as failed ("reply echoed a credential") and neither caches
  nor returns the text;
* :func:`find_secret_leaks` checks every file a run wrote (text, JSON, notebooks, and
  parquet through pyarrow, whose strings may be compressed on disk).

Credentials are the values of :data:`SECRET_ENV` plus any variable a backend names
(its ``api_key_env``), except values that cannot be secret (:func:`weakness`: a known placeholder
such as ``sk-no-key-required`` or ``EMPTY``, fewer than 12 characters beyond the public prefix, or
under 40 bits of entropy): searching for those would match ordinary words and cost a user their
results; :func:`note_unsearched` says so once, one line per variable.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import zlib
from functools import lru_cache
from typing import Callable, Iterable

__all__ = ["SECRET_ENV", "PLACEHOLDERS", "weakness", "note_unsearched", "secret_values", "scrub", "scrub_secrets", "clip", "credentials", "echoed_credential",
           "find_secret_leaks", "locate_secret_leaks", "FRAGMENT", "SecretLeakError"]

#: Environment variables whose values are secrets (API keys, tokens).
SECRET_ENV = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")


def secret_values(extra_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The secret values set in this environment (name -> value): those that could be secret
    (:func:`weakness` finds nothing to say against them)."""
    return {n: v for n in SECRET_ENV + tuple(extra_env) if (v := os.environ.get(n)) and weakness(v) is None}


#: Values that servers' documentation tells users to set when the server needs no key (vLLM, llama.cpp,
#: Ollama, LM Studio, gateways), compared case-insensitively: never searched for in outputs.
PLACEHOLDERS = frozenset({
    "sk-no-key-required", "no-key-required", "anything", "empty", "none", "null", "dummy", "sk-dummy",
    "dummy-key", "fake", "fake-key", "sk-fake", "sk-fake-key", "test", "sk-test", "placeholder", "not-needed",
    "not-used", "unused", "no-key", "nokey", "sk-no-key", "key", "api-key", "your-api-key", "your_api_key",
    "sk-your-key", "sk-xxx", "ollama", "lm-studio", "lmstudio", "llama", "llama.cpp", "vllm", "local",
    "sk-local", "token-abc123", "sk-1234", "sk-12345", "sk-123456", "changeme", "secret", "password",
})

#: Shortest secret part (after the public prefix) worth searching for, and least information in it
#: (characters times the Shannon entropy of their distribution, in bits). A random key of the common
#: providers has 30-90 characters and well over 100 bits; ``required`` or ``anything`` have 8 and ~22.
MIN_SECRET_CHARS = 12
MIN_SECRET_BITS = 40.0


def weakness(value: str) -> str | None:
    """Why ``value`` cannot be a secret worth searching for in outputs (a known placeholder, too short,
    too low in entropy), else None. Searching for such a value would match ordinary words in
    transcripts and cost a user their results."""
    import math
    from collections import Counter

    if value.strip().lower() in PLACEHOLDERS:
        return "is a known placeholder"
    body = value[_public_prefix(value):]
    if len(body) < MIN_SECRET_CHARS:
        return f"has fewer than {MIN_SECRET_CHARS} characters beyond its public prefix"
    counts = Counter(body)
    bits = -sum(c * math.log2(c / len(body)) for c in counts.values())
    if bits < MIN_SECRET_BITS:
        return "is too low in entropy to be secret"
    return None


_NOTED: set[str] = set()


def note_unsearched(stream: "object | None" = None, extra_env: Iterable[str] = ()) -> list[str]:
    """Say once per process, one line per variable (never its value), which credentials set in the
    environment are not searched for in outputs and why; the lines said now."""
    import sys

    said = []
    for name in SECRET_ENV + tuple(extra_env):
        value = os.environ.get(name)
        why = weakness(value) if value else None
        if why and name not in _NOTED:
            _NOTED.add(name)
            said.append(f"[cfbench] note: {name} {why}; it is not searched for in outputs")
            print(said[-1], file=stream or sys.stderr, flush=True)
    return said

#: Shortest run of a credential's characters that counts as a piece of it.
FRAGMENT = 8

#: A credential's public prefix (``sk-proj-``, ``sk-ant-api03-``, ``hf_``): leading letters and digits
#: each closed by ``-`` or ``_``, at most 16 characters. A piece lying wholly inside it is not secret.
_PREFIX = re.compile(r"^(?:[A-Za-z0-9]{1,6}[-_]){1,3}")


def _public_prefix(value: str) -> int:
    m = _PREFIX.match(value)
    return len(m.group(0)) if m and len(m.group(0)) <= 16 else 0


@lru_cache(maxsize=64)
def _windows(value: str) -> tuple[str, ...]:
    """Every ``FRAGMENT``-character piece of ``value`` that reaches past its public prefix."""
    if len(value) < FRAGMENT:
        return (value,) if value else ()
    start = max(0, _public_prefix(value) - FRAGMENT + 1)
    return tuple(dict.fromkeys(value[i:i + FRAGMENT] for i in range(start, len(value) - FRAGMENT + 1)))


def _fragment_spans(text: str, value: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are runs of >= FRAGMENT consecutive characters of ``value`` (each
    extended along the credential both ways, public prefix included)."""
    spans: list[tuple[int, int]] = []
    n = len(value)
    seen: set[str] = set()
    for window in _windows(value):
        if window in seen:
            continue
        seen.add(window)
        start = text.find(window)
        while start != -1:
            i = value.find(window)
            while i != -1:
                a, b, va, vb = start, start + len(window), i, i + len(window)
                while a > 0 and va > 0 and text[a - 1] == value[va - 1]:
                    a, va = a - 1, va - 1
                while b < len(text) and vb < n and text[b] == value[vb]:
                    b, vb = b + 1, vb + 1
                spans.append((a, b))
                i = value.find(window, i + 1)
            start = text.find(window, start + 1)
    return spans


# -- canonical form: what a human or a program reads back, with each character's span in the original --
#: percent (``%73``, ``%u0073``), ``\u``/``\U``/``\x``, octal (``\163``) and JSON escapes, and HTML character
#: references (named, decimal, hex)
_ESCAPE = re.compile(r"%u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\x[0-9a-fA-F]{2}"
                     r"|\\[0-3][0-7]{2}|\\[\\/\"'bfnrt]"
                     r"|&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")
_SIMPLE = {"\\\\": "\\", "\\/": "/", '\\"': '"', "\\'": "'", "\\b": "\b", "\\f": "\f", "\\n": "\n",
           "\\r": "\r", "\\t": "\t"}
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{10,}={0,2}")
#: base64 written in groups of four with a space or tab between them (``c2st cHJv ai1R``): four groups or more
_B64_GROUPS = re.compile(r"(?<![A-Za-z0-9+/_-])(?:[A-Za-z0-9+/_-]{4}[ \t]){3,}[A-Za-z0-9+/_=-]{2,4}"
                         r"(?![A-Za-z0-9+/_=-])")
#: runs of 8 or more hex byte pairs, each optionally ``0x``-prefixed or followed by up to eight separator
#: characters (``0x73, 0x6b``; ``73  6b``; a table's ``0x73,     0x6b``)
_HEX_SEP = r"[\s:,;.\-]{0,8}"
_HEX_RUN = re.compile(rf"(?:(?:0[xX])?[0-9a-fA-F]{{2}}{_HEX_SEP}){{8,}}")
_NOT_HEX = re.compile(r"0[xX]|[^0-9a-fA-F]")
#: sixteen or more hex digits each followed by a separator (``7 3 6 b``): hex spaced out digit by digit
_NIBBLES = re.compile(r"(?:[0-9a-fA-F][\s\-_.,:;|/\\'\"`]{1,3}){16,}")
#: code points outside the control/format categories that still show nothing
_BLANK = "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u3164\uffa0" + "".join(
    map(chr, range(0xFE00, 0xFE10)))


@lru_cache(maxsize=1)
def _invisible() -> "re.Pattern[str]":
    """Runs of invisible characters: controls (NUL, ESC, CR/LF, ...), format characters (soft hyphen,
    zero-width space/joiners, BOM, bidi marks, tags), blank fillers and variation selectors."""
    import unicodedata

    cps = [cp for cp in range(0x10000) if unicodedata.category(chr(cp)) in ("Cc", "Cf")]
    cps += [ord(c) for c in _BLANK] + list(range(0xE0000, 0xE0080)) + list(range(0xE0100, 0xE01F0))
    ranges: list[list[int]] = []
    for cp in sorted(set(cps)):
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return re.compile("[" + "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "")
                                    for a, b in ranges) + "]+")


def _decode_one(m: re.Match) -> str:
    esc = m.group(0)
    if esc[0] == "&":
        import html

        return html.unescape(esc)
    if esc[:2] == "%u":  # JavaScript's old escape(), %u0073
        return chr(int(esc[2:], 16))
    if esc[0] == "%" or esc[1] == "x":
        return chr(int(esc[-2:], 16))
    if esc[1] in "uU":
        cp = int(esc[2:], 16)
        return chr(cp) if cp <= 0x10FFFF else esc  # \U beyond Unicode spells nothing
    if esc[1] in "0123":  # a C / shell octal escape, \163
        return chr(int(esc[1:], 8))
    return _SIMPLE[esc]


def _readable(chars: str) -> str:
    """``chars`` as read back: invisible characters dropped, compatibility forms (full-width,
    mathematical letters, ligatures) folded by NFKC."""
    import unicodedata

    if _invisible().search(chars):
        chars = _invisible().sub("", chars)
    return chars if chars.isascii() else unicodedata.normalize("NFKC", chars)


def _canon_pass(text: str) -> tuple[str, list[int], list[int]] | None:
    """One reading of ``text``: every escape and character reference decoded, invisible characters
    dropped, NFKC applied character by character; for each character of the reading the start and
    end of what spelled it in ``text``. None when the reading is ``text`` itself."""
    if _quick_pass(text) == text:
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def emit(chars: str, a: int, b: int) -> None:
        for ch in _readable(chars):
            out.append(ch)
            starts.append(a)
            ends.append(b)

    pos = 0
    for m in _ESCAPE.finditer(text):
        a, b = m.span()
        for i in range(pos, a):
            emit(text[i], i, i + 1)
        emit(_decode_one(m), a, b)
        pos = b
    for i in range(pos, len(text)):
        emit(text[i], i, i + 1)
    return "".join(out), starts, ends


def _quick_pass(text: str) -> str:
    """The same reading as :func:`_canon_pass`, without positions (fast, for detection)."""
    if "%" in text or "\\" in text or "&" in text:
        text = _ESCAPE.sub(_decode_one, text)
    return _readable(text)


@lru_cache(maxsize=64)
def _b64_windows(value: str) -> tuple[str, ...]:
    """Every 10-character piece of the base64 spelling of ``value`` at each of the three byte
    alignments (standard and URL-safe alphabets), edge characters that depend on neighbouring bytes
    left out. Any 8-byte piece of the credential, base64-encoded inside any longer text, spells
    at least 9 such characters, so a piece of >= 9 bytes always shows one of these windows."""
    raw = value.encode("utf-8")
    secret = raw[max(0, _public_prefix(value) - FRAGMENT + 1):]
    out: dict[str, None] = {}
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + secret).decode("ascii").rstrip("=")
        first = (pad * 8 + 5) // 6          # characters touched by the padding bytes
        last = (len(secret) + pad) * 8 // 6  # characters fully inside the data
        core = enc[first:last]
        for std in (core, core.replace("+", "-").replace("/", "_")):
            for i in range(len(std) - 9):
                out[std[i:i + 10]] = None
    return tuple(out)


def _decoded_chain(text: str) -> list[tuple[str, Callable[[int, int], tuple[int, int]]]]:
    """``text`` and its decodings (up to three rounds, for double encodings), each with a map from
    its spans to spans of ``text``."""
    views: list[tuple[str, Callable[[int, int], tuple[int, int]]]] = [(text, lambda a, b: (a, b))]
    cur, cur_map = text, views[0][1]
    for _ in range(3):
        dec = _canon_pass(cur)
        if dec is None:
            break
        d, st, en = dec

        def mapped(a: int, b: int, st=st, en=en, prev=cur_map) -> tuple[int, int]:
            return prev(st[a], en[b - 1])

        views.append((d, mapped))
        cur, cur_map = d, mapped
    return views


def _quick_decodings(text: str) -> list[str]:
    """``text`` and its readings (no position maps: for detection)."""
    out = [text]
    for _ in range(3):
        d = _quick_pass(out[-1])
        if d == out[-1]:
            break
        out.append(d)
    return out


#: the byte encodings a key's hex spelling is looked for in
_HEX_CODECS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


@lru_cache(maxsize=64)
def _hex_blocks(value: str) -> "re.Pattern[str]":
    """The hex spelling of the credential's blocks (:func:`_blocks`), separators allowed: every hex
    spelling of a window holds one, so a text without a match holds none (a fast first test)."""
    sep = _HEX_SEP + r"(?:0[xX])?"
    return re.compile("|".join(sep.join(f"{b:02x}" for b in blk.encode(codec))
                               for blk in _blocks(value) + _blocks(value[::-1]) for codec in _HEX_CODECS),
                      re.IGNORECASE)


@lru_cache(maxsize=64)
def _hex_windows(value: str) -> tuple[str, ...]:
    """The lower-case hex spelling of every ``FRAGMENT``-character piece of ``value`` and of it reversed, as
    UTF-8, UTF-16 and UTF-32 bytes (either order: a key written out as UTF-16, every other byte 00, or as
    UTF-32, three bytes 00 in every four)."""
    return tuple(w.encode(codec).hex() for w in _windows(value) + _windows(value[::-1])
                 for codec in _HEX_CODECS)


def _hex_runs(view: str, value: str) -> list[tuple[int, int]]:
    """Spans of ``view`` whose hex digits (separators and ``0x`` allowed between byte pairs) spell a
    piece of ``value``: each from the first to the last digit of the piece, nothing around it."""
    wins = _hex_windows(value)
    spans: list[tuple[int, int]] = []
    if not wins or not _hex_blocks(value).search(view):
        return spans
    for m in _HEX_RUN.finditer(view):
        run = m.group(0)
        digits = _hex_digits(run)
        spans.extend(_kept_spans(m.start(), digits, "".join(run[i] for i in digits).lower(), wins))
    return spans


def _hex_digits(run: str) -> list[int]:
    """Offsets in a :data:`_HEX_RUN` match of its hex digits (separators and the ``0`` of ``0x`` left out)."""
    return [i for i, c in enumerate(run) if c in "0123456789abcdefABCDEF"
            and not (c == "0" and run[i + 1:i + 2] in ("x", "X"))]


def _spaced_hex_runs(view: str, value: str) -> list[tuple[int, int]]:
    """:func:`_hex_runs` for hex spaced out digit by digit (``7 3 6 b``, :data:`_NIBBLES`): read with the loose
    separators dropped, each span mapped back to ``view``."""
    if not _NIBBLES.search(view):
        return []
    keep = [i for i, c in enumerate(view) if c not in _LOOSE_SEP]
    return [(keep[a], keep[b - 1] + 1) for a, b in _hex_runs(view.translate(_DROP_SEP), value)]


def _kept_spans(start: int, keep: list[int], kept: str, windows: Iterable[str]) -> list[tuple[int, int]]:
    """Spans in the text of every occurrence of ``windows`` in ``kept``: the characters of a run starting at
    ``start`` whose offsets in it are ``keep`` (its separators left out), each span from the first to the last
    character of the occurrence."""
    out = []
    for w in windows:
        at = kept.find(w)
        while at != -1:
            out.append((start + keep[at], start + keep[at + len(w) - 1] + 1))
            at = kept.find(w, at + 1)
    return out


# -- runs that decode to bytes: a base64 run (read whole, so base64 of base64 is read too), a base32 run, a
# list of decimal byte values; each decoded text is read again, as any text (at most _MAX_DEPTH levels) --
_B32_RUN = re.compile(r"[A-Z2-7]{16,}={0,6}|[a-z2-7]{16,}={0,6}")
#: base32 in the extended hex alphabet (RFC 4648 section 7, ``0-9A-V``; Python's ``b32hexencode``)
_B32H_RUN = re.compile(r"[0-9A-V]{16,}={0,6}|[0-9a-v]{16,}={0,6}")
_BYTE = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])"  # 0 to 255, zero-padded or not (``045``)
#: eight or more byte values, decimal or (all digits 0-7, or ``0o`` before each) octal: ``115, 107``, ``163 153``,
#: ``115/107``, ``115-107``, ``115 107 045``
_DEC_RUN = re.compile(rf"(?<![0-9.])(?:0o)?{_BYTE}(?:(?:\s*[,;/-]\s*|\s+)(?:0o)?{_BYTE}){{7,}}(?![0-9.])")
#: eight or more byte values joined by dots, ``115.107.45.112`` (an address-like spelling; a decimal number has one dot)
_DOT_RUN = re.compile(rf"(?<![0-9.]){_BYTE}(?:\.{_BYTE}){{7,}}(?![0-9]|\.[0-9])")
#: the key's bytes read as one big-endian whole number, written in decimal: 19 digits or more (8 bytes)
_INT_RUN = re.compile(r"(?<![0-9.])[0-9]{19,1200}(?![0-9])")
#: a numbered, annotated or wrapped list of byte values, ``115 (n=0), 107 (n=1)``, ``1: 115\n2: 107``, ``[115][107]``,
#: ``chr(115)+chr(107)``: 16 or more numbers with up to 10 other characters between them, read every number, and
#: every second and every third number from each start
_NUMBERED_RUN = re.compile(r"(?<![0-9])[0-9]{1,3}(?:[^0-9]{1,10}[0-9]{1,3}){15,}(?![0-9])")
#: uuencoded lines (a length character, then characters from space to backtick) after a ``begin 644 name``
#: header, each ended by a newline or by a JSON-escaped one (``\n``, which no such line holds: ``n`` is not
#: among its characters)
_UU_BLOCK = re.compile(r"begin [0-7]{3,4} [^\s\\]+(?:\r?\n|\\n)((?:[!-M][ -`]{4,60}?(?:\r?\n|\\n))+)")
_UU_SPLIT = re.compile(r"\r?\n|\\n")
#: a run of characters from space to backtick, where a uuencoded line with no ``begin`` header may stand: read
#: from each of its first 8 characters whose value as a uu length (8 to 45 bytes) fits in what follows
_UU_RUN = re.compile(r"[ -`]{12,}")
#: eight or more quoted-printable bytes (``=73=6B=2D``)
_QP_RUN = re.compile(r"(?:=[0-9A-Fa-f]{2}){8,}")
#: eight or more CSS escapes (``\73 \6b \2d``: up to six hex digits and an optional space each)
_CSS_RUN = re.compile(r"(?:\\[0-9a-fA-F]{1,6} ?){8,}")
#: eight or more bytes written in binary, ``01110011 01101011`` (separators optional)
_BIN_RUN = re.compile(r"(?<![0-9])[01]{8}(?:[\s,;:]{0,3}[01]{8}){7,}(?![0-9])")
#: base85 (RFC 1924, Python's b85) and Ascii85 (Adobe's, ``<~ ~>`` framing optional) runs
_B85_RUN = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{20,}")
_A85_RUN = re.compile(r"[!-uz]{20,}")
#: longest run decoded (a key's base64 of base64 is under 200 characters; a notebook's images are far longer)
_MAX_RUN = 4096
_MAX_DEPTH = 2


def _printable(raw: bytes) -> str | None:
    """``raw`` as text when it reads as text (UTF-8, at least 8 characters, at least 4 of them different, 90 % of
    them printable), else None. A float's digits read as hex (``0.3333333333333333``: ``33333333``) are not read
    again: no credential's piece repeats so few characters (:func:`weakness` turns such values away)."""
    text = raw.decode("utf-8", "ignore")
    if len(text) < FRAGMENT or len(set(text[:64])) < 4:
        return None
    shown = sum(1 for c in text if c.isprintable() or c in "\t\r\n")
    return text if shown >= 0.9 * len(text) else None


def _b64_text(run: str) -> str | None:
    body = run.rstrip("=")
    alt = b"-_" if ("-" in body or "_" in body) else None
    body = body[:len(body) - len(body) % 4]
    try:
        raw = base64.b64decode(body, altchars=alt, validate=True) if alt else base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable(raw) or _printable(_utf16(raw)) or _printable(_inflated(raw))


def _utf16(raw: bytes) -> bytes:
    """``raw`` read as UTF-16 (the byte order whose zero bytes fall where ASCII text puts them) and written as
    UTF-8, when at least a third of its bytes are 0, else nothing."""
    if raw.count(0) * 3 < len(raw):
        return b""
    codec = "utf-16-le" if raw[1::2].count(0) >= raw[0::2].count(0) else "utf-16-be"
    return raw[: len(raw) // 2 * 2].decode(codec, "ignore").encode("utf-8", "ignore")


def _inflated(raw: bytes) -> bytes:
    """``raw`` decompressed when it starts as zlib, gzip, bzip2 or xz data does (at most 64 KiB out), else
    nothing."""
    return _inflate(raw)[0]


def _inflate(raw: bytes) -> tuple[bytes, int]:
    """:func:`_inflated` and how many bytes of ``raw`` the compressed data took (0 when it is none)."""
    if raw[:3] == b"BZh" or raw[:6] == b"\xfd7zXZ\x00":
        import bz2
        import lzma

        d = bz2.BZ2Decompressor() if raw[0] == 0x42 else lzma.LZMADecompressor()
        try:
            out = d.decompress(raw, 65536)
        except (OSError, EOFError, ValueError, lzma.LZMAError):
            return b"", 0
        return out, len(raw) - len(d.unused_data)
    if raw[:2] == b"\x1f\x8b":
        wbits = 31
    elif len(raw) >= 2 and raw[0] == 0x78 and (raw[0] << 8 | raw[1]) % 31 == 0:
        wbits = 15
    else:
        return b"", 0
    z = zlib.decompressobj(wbits)
    try:
        out = z.decompress(raw, 65536)
    except zlib.error:
        return b"", 0
    return out, len(raw) - len(z.unused_data)


def _uu_text(block: str) -> str | None:
    """The text a block of uuencoded lines decodes to, else None."""
    try:
        return _printable(b"".join(binascii.a2b_uu(line) for line in _UU_SPLIT.split(block) if line.strip()))
    except (binascii.Error, ValueError):
        return None


def _b85_text(run: str) -> str | None:
    try:
        return _printable(base64.b85decode(run))
    except ValueError:
        return None


def _a85_text(run: str) -> str | None:
    try:
        return _printable(base64.a85decode(run.removeprefix("<~").removesuffix("~>"), adobe=False))
    except ValueError:
        return None


def _b32_text(run: str, decode: Callable[[str], bytes] = base64.b32decode) -> str | None:
    """The text a base32 run decodes to (standard alphabet, or another through ``decode``), else None."""
    body = run.rstrip("=").upper()
    body = body[:len(body) - len(body) % 8]
    try:
        return _printable(decode(body))
    except (binascii.Error, ValueError):
        return None


def _b32h_text(run: str) -> str | None:
    return _b32_text(run, base64.b32hexdecode)


def _uu_lines(run: str) -> Iterable[tuple[int, int, str]]:
    """``(start, end, text)`` in ``run`` (a :data:`_UU_RUN` match) for each uuencoded line without a header that
    starts at one of its first 8 characters: the line's first character gives its byte count ``n`` (8 to 45),
    so the line is that character and ``4 ceil(n / 3)`` more."""
    for k in range(min(8, len(run) - 11)):
        n = ord(run[k]) - 32
        need = 1 + 4 * -(-n // 3)
        if 8 <= n <= 45 and k + need <= len(run):
            try:
                text = _printable(binascii.a2b_uu(run[k:k + need]))
            except (binascii.Error, ValueError):
                continue
            if text is not None:
                yield k, k + need, text


def _blobs(view: str) -> list[tuple[int, int]]:
    """Spans of base64 runs longer than ``_MAX_RUN`` (a notebook's images), which no reading decodes."""
    return [(m.start(), m.end()) for m in _B64_RUN.finditer(view) if len(m.group(0)) > _MAX_RUN]


def _in_blob(blobs: list[tuple[int, int]], m: re.Match) -> bool:
    """Whether a base85 or Ascii85 run starts or ends inside one of ``blobs``: a piece of an image, cut off
    by a character base85 or Ascii85 lacks. Decoding every such piece tripled the time of a results check."""
    import bisect

    for at in (m.start(), m.end() - 1):
        k = bisect.bisect_right(blobs, (at, float("inf"))) - 1
        if k >= 0 and blobs[k][0] <= at < blobs[k][1]:
            return True
    return False


def _byte_runs(view: str) -> list[tuple[int, int, str]]:
    """``(start, end, text)`` for every run of ``view`` that decodes to text: base64, base32, base85 and
    Ascii85 runs (tried from each of their first characters up to one block in, since a letter before one
    joins its run; base32 also in the extended hex alphabet), and the runs :func:`_number_and_escape_runs`
    reads; a base64 run of UTF-16 text, or of zlib, gzip, bzip2 or xz data, is read as that text,
    decompressed. The span starts where the decoding that gave the text starts."""
    out: list[tuple[int, int, str]] = []
    blobs = _blobs(view)
    for pattern, decode, block in ((_B64_RUN, _b64_text, 4), (_B32_RUN, _b32_text, 8), (_B32H_RUN, _b32h_text, 8),
                                   (_B85_RUN, _b85_text, 5), (_A85_RUN, _a85_text, 5)):
        for m in pattern.finditer(view):
            run = m.group(0)
            if len(run) < 16 or len(run) > _MAX_RUN or (block == 5 and _in_blob(blobs, m)):
                continue
            for k in range(min(block, len(run) - 15)):
                text = decode(run[k:])
                if text is not None:
                    out.append((m.start() + k, m.end(), text))
    out.extend(_number_and_escape_runs(_blanked(view, blobs)))
    return out


def _blanked(view: str, blobs: list[tuple[int, int]]) -> str:
    """``view`` with its long base64 runs (:func:`_blobs`: a notebook's images) turned into spaces, same length:
    the digits in an image would be read as numbers at great cost and to no end."""
    if not blobs:
        return view
    parts, at = [], 0
    for a, b in blobs:
        parts += [view[at:a], " " * (b - a)]
        at = b
    return "".join(parts) + view[at:]


def _number_and_escape_runs(view: str) -> Iterable[tuple[int, int, str]]:
    """``(start, end, text)`` for the runs of ``view`` that are not base-N words: decimal byte lists (numbered or
    wrapped ones read number by number, every second and every third number; dotted ones), hex runs (also of
    compressed data), the bytes as one whole number, bytes in binary and in octal, uuencoded lines (after a
    ``begin`` header or alone), quoted-printable bytes and CSS escapes; the last three kinds are tried only where
    their marker occurs."""
    def runs(pattern: "re.Pattern[str]"):
        return (m for m in pattern.finditer(view) if len(m.group(0)) <= _MAX_RUN)

    for run_re, digits, bases in ((_DEC_RUN, r"[0-9]+", (10, 8)), (_DOT_RUN, r"[0-9]+", (10,)),
                                  (_BIN_RUN, r"[01]{8}", (2,))):
        for m in runs(run_re):
            values = re.findall(digits, m.group(0).replace("0o", " "))
            for base in bases:
                if base == 8 and any(c in "89" for x in values for c in x):
                    continue
                if max(int(x, base) for x in values) <= 255 and (
                        text := _printable(bytes(int(x, base) for x in values))) is not None:
                    yield m.start(), m.end(), text
    for m in runs(_HEX_RUN):  # hex of another spelling (hex of base64 ...); the key's own hex: _hex_runs
        run = m.group(0)
        at = _hex_digits(run)
        digits = "".join(run[i] for i in at)
        for k in (0, 1):  # a hex letter of a word glued on in front shifts the pairs by one
            raw = bytes.fromhex(digits[k:len(digits) - (len(digits) - k) % 2])
            # a word of hex letters beside the run ("twice 73 6b ... 35 before") is a byte pair of it: the bytes
            # at either end that are not printable ASCII are left out, and so are their digits from the span
            i0, i1 = 0, len(raw)
            while i0 < i1 and not 0x20 <= raw[i0] <= 0x7E:
                i0 += 1
            while i1 > i0 and not 0x20 <= raw[i1 - 1] <= 0x7E:
                i1 -= 1
            if i1 - i0 >= FRAGMENT and (text := _printable(raw[i0:i1])) is not None:
                yield m.start() + at[k + 2 * i0], m.start() + at[k + 2 * i1 - 1] + 1, text
            else:  # hex of zlib, gzip, bzip2 or xz data, maybe after a byte pair of a hex-letter word
                for j in range(min(3, len(raw))):
                    out, used = _inflate(raw[j:])
                    if (text := _printable(out)) is not None:
                        yield m.start() + at[k + 2 * j], m.start() + at[k + 2 * (j + used) - 1] + 1, text
                        break
    for m in runs(_INT_RUN):
        number = int(m.group(0))
        if (text := _printable(number.to_bytes((number.bit_length() + 7) // 8, "big"))) is not None:
            yield m.start(), m.end(), text
    for m in runs(_NUMBERED_RUN):
        numbers = [int(x) for x in re.findall(r"[0-9]+", m.group(0))]
        for stride in (1, 2, 3):
            for first in range(stride):
                picked = numbers[first::stride]
                if max(picked) <= 255 and (text := _printable(bytes(picked))) is not None:
                    yield m.start(), m.end(), text
    if "begin " in view:
        for m in runs(_UU_BLOCK):
            if (text := _uu_text(m.group(1))) is not None:
                yield m.start(), m.end(), text
    for m in runs(_UU_RUN):
        for a, b, text in _uu_lines(m.group(0)):
            yield m.start() + a, m.start() + b, text
    if "=" in view:
        for m in runs(_QP_RUN):
            if (text := _printable(bytes.fromhex(m.group(0).replace("=", "")))) is not None:
                yield m.start(), m.end(), text
    if "\\" in view:
        for m in runs(_CSS_RUN):
            points = [int(x, 16) for x in re.findall(r"\\([0-9a-fA-F]{1,6})", m.group(0))]
            if max(points) <= 0x10FFFF and (text := _printable(
                    "".join(map(chr, points)).encode("utf-8", "ignore"))) is not None:
                yield m.start(), m.end(), text


def _in_byte_runs(view: str, name: str, value: str, depth: int) -> list[tuple[int, int]]:
    """Spans of ``view``'s decodable runs (:func:`_byte_runs`) whose text holds a piece of ``value``."""
    if depth >= _MAX_DEPTH:
        return []
    return [(a, b) for a, b, text in _byte_runs(view)
            if echoed_credential(text, creds={name: value}, _depth=depth + 1) is not None]


#: characters a key may be spaced out with ("s k - p r o j", "sk-proj Xq7Lm2P zR9tKw4", a list of its
#: characters "['s', 'k', '-']"): the loose readings drop them from the text and from the key alike
_LOOSE_SEP = frozenset(" \t\r\n\f\v-_.,:;|/\\'\"`")
_ROT47 = str.maketrans("".join(map(chr, range(33, 127))),
                       "".join(chr(33 + (c - 33 + 47) % 94) for c in range(33, 127)))


def _letters_as(alphabet: str) -> dict[int, int]:
    """A table writing each letter as the one at its place in ``alphabet`` (case kept, other characters too)."""
    upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return str.maketrans(upper + upper.lower(), alphabet + alphabet.lower())


#: the letters shifted by each of 1..25 places (a Caesar cipher; 13 is ROT13) and the alphabet reversed (Atbash)
_LETTER_CODES = tuple(_letters_as("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k:] + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:k])
                      for k in range(1, 26)) + (_letters_as("ZYXWVUTSRQPONMLKJIHGFEDCBA"),)
_DROP_SEP = {ord(c): None for c in _LOOSE_SEP}
#: Unicode tag characters (U+E0020 to U+E007E), which show nothing and spell ASCII one for one
_TAG = re.compile("[\U000E0020-\U000E007E]")
_TAG_ASCII = {cp: cp - 0xE0000 for cp in range(0xE0020, 0xE007F)}
#: eight or more doubled characters in a row, each pair unlike the next ("sskk--pprroojj--"): where a piece of a
#: key written with every character twice may stand; read once, each stretch on its own (a run of one character,
#: an indent of spaces or "AAAA" in an image, is no such stretch)
_DOUBLED = re.compile(r"(?:(.)\1(?!\1)){8,}", re.S)


_Reading = tuple[str, str, "list[int] | None", "list[int] | None"]


def _loose(view: str, value: str, *, positions: bool = True) -> list[_Reading]:
    """Readings of ``view`` beside itself that a person still reads as the key, each with the key as it
    would appear there and, where characters were dropped, the index in ``view`` of each one kept and (for
    a doubled character, else None: one past the kept one) of the end of what it stands for: upper-
    or mixed-case (both lower-cased), reversed (shown the right way round by a bidi override; also in another
    case), Unicode tag characters read as the ASCII they stand for (hidden text), the letters shifted by any
    of 1..25 places (a Caesar cipher; ROT13, which ``codecs`` reads back, is one) or with the alphabet
    reversed (Atbash), ROT47, spaced out or grouped with separators (the separators dropped from both),
    and those spaced out in another case; and the text itself and each of these but the shifted ones with every
    character written twice (``sskk--pprroojj``: each stretch of eight or more doubled characters read once).
    Without ``positions`` (detection) no index list is built."""
    out: list[_Reading] = [(view, value[::-1], None, None), (view, value.translate(_ROT47), None, None)]
    out += [(view, value.translate(code), None, None) for code in _LETTER_CODES]
    head = len(out)  # the readings above are not read for doubled characters
    if not view.isascii() and _TAG.search(view):  # the canonical readings drop tag characters; here they are read
        out.append((view.translate(_TAG_ASCII), value, None, None))
    low = view.lower()
    if len(low) == len(view):
        out.append((low, value.lower(), None, None))
        out.append((low, value.lower()[::-1], None, None))
    squeezed = view.translate(_DROP_SEP)
    if len(squeezed) < len(view):
        keep = [i for i, c in enumerate(view) if c not in _LOOSE_SEP] if positions else None
        bare = value.translate(_DROP_SEP)
        out.append((squeezed, bare, keep, None))
        if len(squeezed.lower()) == len(squeezed):
            out.append((squeezed.lower(), bare.lower(), keep, None))
    if not _DOUBLED.search(view) and not _DOUBLED.search(squeezed.lower()):
        return out  # no other reading has a stretch of doubled characters either (separators dropped, case folded)
    seen: set[tuple[str, str]] = set()
    for reading in [(view, value, None, None), *out[head:]]:  # the text itself, another case, separators dropped
        if (reading[0], reading[1]) not in seen:
            out.extend(_undoubled(reading, positions))
        seen.add((reading[0], reading[1]))
    return out


def _undoubled(reading: _Reading, positions: bool) -> list[_Reading]:
    """Each stretch of ``reading`` (the text itself, lower-cased or with separators dropped: :func:`_loose`)
    made of eight or more doubled characters (:data:`_DOUBLED`), read once; with ``positions``, the start and
    end in the text the reading was made from of the pair each character stands for."""
    v, value, keep, _ = reading
    out: list[_Reading] = []
    for m in _DOUBLED.finditer(v):
        once = m.group(0)[::2]
        if not positions:
            out.append((once, value, None, None))
            continue
        starts = list(range(m.start(), m.end(), 2))
        ends = [a + 2 for a in starts]
        if keep is not None:
            starts, ends = [keep[a] for a in starts], [keep[e - 1] + 1 for e in ends]
        out.append((once, value, starts, ends))
    return out


def _grouped_b64_spans(m: re.Match, b64: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of ``m`` (a :data:`_B64_GROUPS` match) covering each base64 window of the key found in it once
    its spaces are taken out: from the window's first character to its last, the spaces between included,
    so a word glued on in front of the first group stays."""
    run = m.group(0)
    keep = [i for i, c in enumerate(run) if c not in " \t"]
    return _kept_spans(m.start(), keep, "".join(run[i] for i in keep), b64)


def _loose_hit(view: str, value: str) -> bool:
    """Whether any loose reading of ``view`` holds a piece of ``value`` (:func:`_loose`)."""
    return any(any(w in v for w in _windows(val)) for v, val, _, _ in _loose(view, value, positions=False))


def _spans(text: str, value: str) -> list[tuple[int, int]]:
    """Spans of ``text`` spelling a piece of ``value`` in any canonical or loose reading; a base64 run
    that holds one goes whole."""
    spans: list[tuple[int, int]] = []
    b64 = _b64_windows(value)
    n = len(text)

    def flipped(back: Callable[[int, int], tuple[int, int]]) -> Callable[[int, int], tuple[int, int]]:
        def to_text(a: int, b: int) -> tuple[int, int]:
            start, end = back(a, b)
            return n - end, n - start
        return to_text

    backwards = [(view, flipped(back), True)
                 for view, back in _decoded_chain(text[::-1])]  # a spelling written backwards, whole
    for view, to_text, reverse in [(v, m, False) for v, m in _decoded_chain(text)] + backwards:
        spans.extend(to_text(a, b) for a, b in _fragment_spans(view, value))
        for v, val, keep, ends in ([] if reverse else _loose(view, value)):
            for a, b in _fragment_spans(v, val):
                spans.append(to_text(a, b) if keep is None else
                             to_text(keep[a], keep[b - 1] + 1 if ends is None else ends[b - 1]))
        for m in _B64_RUN.finditer(view):
            run = m.group(0)
            if any(w in run for w in b64):
                spans.append(to_text(*m.span()))
        for m in _B64_GROUPS.finditer(view):
            spans.extend(to_text(a, b) for a, b in _grouped_b64_spans(m, b64))
        spans.extend(to_text(a, b) for a, b in _hex_runs(view, value) + _spaced_hex_runs(view, value))
        spans.extend(to_text(a, b) for a, b in _in_byte_runs(view, "", value, 0))
    return spans


def scrub(text: str, extra_env: Iterable[str] = ()) -> str:
    """``text`` with every credential replaced by ``<NAME>``: any piece of ``FRAGMENT`` (8) or more
    of its characters, read after decoding every percent-escape (any case), ``\\u`` and JSON
    escape, and inside base64 runs (a run that spells a piece goes whole)."""
    if not text:
        return text
    for name, value in credentials(extra_env).items():
        for _ in range(4):  # a replacement can expose a spelling the last pass did not see
            if echoed_credential(text, creds={name: value}) is None:
                break
            spans = _spans(text, value)
            if not spans:  # read in a way no span maps back to: the whole text goes
                return f"<{name}>"
            spans.sort()
            merged: list[list[int]] = []
            for a, b in spans:
                if merged and a <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            for a, b in reversed(merged):
                text = text[:a] + f"<{name}>" + text[b:]
    return text


def clip(text: str, limit: int) -> str:
    """Scrub, then clip to ``limit`` characters (scrubbing first, so the cut cannot split a key)."""
    text = scrub(text.strip())
    return text[:limit] + "…" if len(text) > limit else text


def credentials(extra_env: Iterable[str] = ()) -> dict[str, str]:
    """The credentials set in the environment now (name -> value); pass to :func:`echoed_credential`
    when checking many texts."""
    return secret_values(tuple(extra_env))


def echoed_credential(text: str | None, extra_env: Iterable[str] = (), *,
                      creds: dict[str, str] | None = None, _depth: int = 0) -> str | None:
    """The name of the credential ``text`` holds (a piece of 8+ characters in any of the canonical
    readings :func:`scrub` uses, or in the text a base64, base32 or decimal-byte run of it decodes to),
    else None."""
    if not text:
        return None
    creds = credentials(extra_env) if creds is None else creds
    if not creds:
        return None
    # also the whole text read backwards, for a spelling written backwards (the loose readings already
    # reverse the key itself, and reversing twice would match its public prefix)
    views = [(v, False) for v in _quick_decodings(text)] + [(v, True) for v in _quick_decodings(text[::-1])]
    for name, value in creds.items():
        windows, blocks, b64 = _windows(value), _blocks(value), _b64_windows(value)
        for view, backwards in views:
            # every window holds one of the blocks: the full test only runs on a block hit
            if any(b in view for b in blocks) and any(w in view for w in windows):
                return name
            if b64 and _B64_RUN.search(view) and any(w in view for w in b64):
                return name
            if b64 and any(_grouped_b64_spans(m, b64) for m in _B64_GROUPS.finditer(view)):
                return name
            if _hex_runs(view, value) or _spaced_hex_runs(view, value):
                return name
            if not backwards and _loose_hit(view, value):
                return name
            if _in_byte_runs(view, name, value, _depth):
                return name
    return None


@lru_cache(maxsize=64)
def _blocks(value: str) -> tuple[str, ...]:
    """The credential's 4-character blocks at multiples of 4 from where its windows start: each
    ``FRAGMENT``-character window contains one, so a text holding none holds no window."""
    if len(value) < FRAGMENT:
        return (value,) if value else ()
    start = max(0, _public_prefix(value) - FRAGMENT + 1)
    first = -(-start // 4) * 4
    return tuple(dict.fromkeys(value[j:j + 4] for j in range(first, len(value) - 3, 4)))


class SecretLeakError(ValueError):
    """A credential from the environment was found in what a run wrote (one line, no traceback)."""


#: The name most callers know: scrub every credential from a text.
scrub_secrets = scrub


#: The view page's data block: JSON ``{"encoding": "gzip+base64", "payload": ...}`` (cfbench.view.page).
_PACKED_BLOCK = re.compile(r'<script type="application/json" id="cfbench-data">(.*?)</script>', re.S)


def _packed_page_data(page: str) -> list[str]:
    """The decompressed data blocks of a cfbench view page (gzip then base64 inside a JSON
    script element); a block that does not decode is returned as it stands."""
    import gzip
    import json

    out = []
    for m in _PACKED_BLOCK.finditer(page):
        try:
            box = json.loads(m.group(1))
            packed = box["payload"] if isinstance(box, dict) and box.get("encoding") == "gzip+base64" else None
            if packed is None:
                continue
            out.append(gzip.decompress(base64.b64decode(packed)).decode("utf-8", "replace"))
        except (ValueError, KeyError, TypeError, OSError, EOFError):  # not our encoding: the raw text was scanned
            continue
    return out


def _first_offset(text: str, creds: dict[str, str]) -> int | None:
    """Where in ``text`` the first piece of a credential starts (any reading), else None."""
    name = echoed_credential(text, creds=creds)
    if name is None:
        return None
    spans = _spans(text, creds[name])
    return min(a for a, _ in spans) if spans else 0


def _parquet_leak(path: "os.PathLike[str]", creds: dict[str, str]) -> str | None:
    """``row R, column 'C'`` of the first parquet cell holding a credential (strings may be compressed
    on disk, so the cells are read), else None."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for column in table.column_names:
        for row, cell in enumerate(table.column(column).to_pylist()):
            if cell is not None and echoed_credential(str(cell), creds=creds):
                return f"row {row}, column {column!r}"
    return None


def locate_secret_leaks(directory: "os.PathLike[str] | str", extra_env: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Every file under ``directory`` holding a credential from the environment (any form, or a piece),
    with where in it: ``(path, "character 123")``, ``(path, "row 4, column 'text'")`` for parquet,
    ``(path, "its packed page data")`` for a view page. Never the credential itself."""
    from pathlib import Path

    creds = credentials(extra_env)
    if not creds:
        return []
    hits = []
    for path in sorted(Path(directory).rglob("*")):
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        at = _first_offset(text, creds)
        if at is not None:
            hits.append((str(path), f"character {at}"))
        elif path.suffix == ".parquet" and (cell := _parquet_leak(path, creds)):
            hits.append((str(path), cell))
        elif path.suffix in (".html", ".htm") and echoed_credential("\n".join(_packed_page_data(text)), creds=creds):
            hits.append((str(path), "its packed page data"))
    return hits


def find_secret_leaks(directory: "os.PathLike[str] | str", extra_env: tuple[str, ...] = ()) -> list[str]:
    """Files under ``directory`` that hold a credential from the environment (any form, or a piece)."""
    return [path for path, _ in locate_secret_leaks(directory, extra_env)]
