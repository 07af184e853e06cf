"""Issue 36: a key spelled in any form a person or a program reads back (hex, HTML references, invisible
characters between its letters, full-width or mathematical letters), at any offset, is found and
scrubbed, and a server echoing it in any of these forms leaves it in no file."""

from __future__ import annotations

import base64
import binascii
import bz2
import json
import lzma
import sqlite3
import zlib

import pandas as pd
import pytest

from cfbench.core.secrets import _quick_decodings, echoed_credential, find_secret_leaks, scrub
from cfbench.judges.fakeserver import KEY_FORMS

KEY = "sk-proj-" + "Hq4Lz8Wm2Xc6Vb9Nt3Rk7Pd5"
BODY = KEY[len("sk-proj-"):]
FILLER = "The agent greets the customer and checks the order number twice before answering. " * 2
OFFSETS = (0, 1, 7, 64)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _unpacked(text: str, depth: int = 2) -> list[str]:
    """``text`` and what the test itself reads out of it, independently of cfbench's reader: each base64 or
    base32 word decoded whole (and once more, for base64 of base64), base85 and Ascii85 words, decimal byte
    lists (also every second number of a numbered one), octal, ``\\U`` and CSS escapes, UTF-16 in hex, bytes in
    binary, ROT13 and ROT47, ``%u`` and quoted-printable escapes, the characters of a quoted list joined, uuencoded
    lines (also with no header: a line's first character gives its length), zlib or gzip data and UTF-16 in
    base64, base64 in spaced groups, octal byte values, UTF-32 in hex, base32 in the extended hex alphabet, Unicode
    tag characters, the bytes as one decimal number, hex of any of these, bzip2 and xz data in base64;
    the hex of a piece reversed."""
    import codecs
    import re

    out = [text, re.sub(r"\\([0-3][0-7]{2})", lambda m: chr(int(m.group(1), 8)), text),
           re.sub(r"\\U([0-9a-fA-F]{8})", lambda m: chr(int(m.group(1), 16)), text), codecs.decode(text, "rot13"),
           re.sub(r"%u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text),
           re.sub(r"=([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), text),
           "".join(chr(33 + (ord(c) - 33 + 47) % 94) if "!" <= c <= "~" else c for c in text),
           "".join(re.findall(r"'(.)'", text)),
           "".join(chr(ord(c) - 0xE0000) if 0xE0020 <= ord(c) <= 0xE007E else c for c in text)]  # tag characters
    for digits in re.findall(r"[0-9]{19,}", text):  # bytes written as one number
        number = int(digits)
        out.append(number.to_bytes((number.bit_length() + 7) // 8, "big").decode("utf-8", "ignore"))
    bits = re.findall(r"\b[01]{8}\b", text)
    if len(bits) >= 8:
        out.append(bytes(int(b, 2) for b in bits).decode("utf-8", "ignore"))
    css = re.findall(r"\\([0-9a-fA-F]{1,6}) ?", text)
    if len(css) >= 8:
        out.append("".join(chr(int(x, 16)) for x in css if int(x, 16) < 0x110000))
    hexed = re.sub(r"[^0-9a-fA-F]", "", text)
    for start in range(2):
        raw = bytes.fromhex(hexed[start:][: (len(hexed) - start) // 4 * 4]) if len(hexed) >= 32 else b""
        out += [raw.decode("utf-16-le", "ignore"), raw.decode("utf-16-be", "ignore")]
    for word in re.findall(r"[0-9a-fA-F]{16,}", text):  # hex of text that is read again (hex of base64)
        for k in (0, 1):
            if len(word) - k >= 16:
                raw = bytes.fromhex(word[k:len(word) - (len(word) - k) % 2])
                try:
                    raw = zlib.decompress(raw)  # hex of zlib data
                except zlib.error:
                    pass
                got = raw.decode("utf-8", "ignore")
                out += _unpacked(got, depth - 1) if depth > 1 else [got]
    for start in range(0, 8, 2):  # UTF-32: four bytes a character, the text around may shift the hex digits
        raw = bytes.fromhex(hexed[start:][: (len(hexed) - start) // 8 * 8]) if len(hexed) >= 64 else b""
        for codec in ("utf-32-le", "utf-32-be"):
            out.append(raw.decode(codec, "ignore"))
    octal = re.findall(r"(?<![0-9])(?:0o)?([0-7]{1,3})(?![0-9])", text)
    if len(octal) >= 8 and max(int(x, 8) for x in octal) < 256:
        out.append(bytes(int(x, 8) for x in octal).decode("utf-8", "ignore"))
    numbered = [int(n) for n in re.findall(r"[0-9]+", text)]  # "115 (n=0), 107 (n=1)", "1: 115\n2: 107"
    if len(numbered) >= 8 and max(numbered) < 256:  # every number: "[115][107]", "chr(115)+chr(107)"
        out.append(bytes(numbered).decode("utf-8", "ignore"))
    for first in (0, 1):
        picked = numbered[first::2]
        if len(picked) >= 8 and max(picked) < 256:
            out.append(bytes(picked).decode("utf-8", "ignore"))
    nums = re.findall(r"\b[0-9]{1,3}\b", text)
    if len(nums) >= 8 and all(int(n) < 256 for n in nums):
        out.append(bytes(int(n) for n in nums).decode("utf-8", "ignore"))
    for run in re.findall(r"[ -`]+", text):  # a uuencoded line, framed or not: length character, 4 per 3 bytes
        for k in range(min(8, len(run))):
            n = ord(run[k]) - 32
            line = run[k:k + 1 + (n + 2) // 3 * 4]
            if 0 < n <= 45 and len(line) == 1 + (n + 2) // 3 * 4:
                try:
                    out.append(binascii.a2b_uu(line).decode("utf-8", "ignore"))
                except binascii.Error:  # bits left over past the n bytes: not a uuencoded line
                    continue
    for block in re.findall(r"begin [0-7]{3} .*\n((?:.*\n)*?)`?\nend", text):  # uuencode
        out.append(b"".join(binascii.a2b_uu(line) for line in block.splitlines() if line.strip()).decode("utf-8",
                                                                                                      "ignore"))
    groups = [m.replace(" ", "") for m in re.findall(r"(?:[A-Za-z0-9+/=]{4} )+[A-Za-z0-9+/=]{1,4}", text)]
    for word in re.findall(r"[A-Za-z0-9+/=]{16,}", text) + groups:
        for decode in (base64.b64decode, base64.b32decode, base64.b32hexdecode):
            for k in range(8):  # a letter of the text around it may be glued on in front
                try:
                    raw = decode(word[k:])
                    for inflate in (lambda b: zlib.decompress(b, 15), lambda b: zlib.decompress(b, 31), bz2.decompress,
                                    lzma.decompress):  # zlib, gzip, bzip2 or xz data
                        try:
                            raw = inflate(raw)
                            break
                        except (zlib.error, OSError, ValueError, lzma.LZMAError):
                            continue
                    got = raw.decode("utf-16-le") if raw[1::2].count(0) * 2 > len(raw) // 2 else raw.decode("utf-8")
                except ValueError:
                    continue
                out += _unpacked(got, depth - 1) if depth > 1 else [got]
    for word in re.findall(r"[!-~]{20,}", text):  # base85 and Ascii85 use most printable ASCII characters
        word = word.replace("<~", "").replace("~>", "")
        for decode in (base64.b85decode, base64.a85decode):
            for k in range(8):
                try:
                    out.append(decode(word[k:]).decode("utf-8"))
                except ValueError:
                    continue
    return out


def readable_trace(text: str) -> bool:
    """Whether a piece of 8+ characters of the key's secret part shows in some reading of ``text``
    (decoded, invisible characters dropped, NFKC; base64, base32, decimal or octal bytes read), or the hex
    spelling of one does."""
    pieces = [BODY[i:i + 8] for i in range(len(BODY) - 7)]
    views = [v for u in _unpacked(text) for v in _quick_decodings(u)]
    hexed = "".join(c for c in text.lower().replace("0x", "") if c in "0123456789abcdef")
    return any(p in v for p in pieces for v in views) or any(q.encode().hex() in hexed for p in pieces
                                                              for q in (p, p[::-1]))


def placed(form: str, offset: int) -> str:
    return FILLER[:offset] + KEY_FORMS[form](KEY) + " " + FILLER[offset:]


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("form", sorted(KEY_FORMS))
def test_each_readable_form_at_each_offset_is_found_and_scrubbed(form, offset):
    text = placed(form, offset)
    assert readable_trace(text), "the test's own reader must see the key"
    assert echoed_credential(text) == "OPENAI_API_KEY"
    out = scrub(text)
    assert "<OPENAI_API_KEY>" in out and echoed_credential(out) is None and not readable_trace(out), repr(out)
    assert out.startswith(FILLER[:offset]) and out.endswith(FILLER[offset:])  # only the key went


@pytest.mark.parametrize("form", ["hex", "soft-hyphen", "html-decimal", "full-width"])
def test_a_piece_of_the_key_in_a_form_is_found(form):
    piece = KEY_FORMS[form](BODY[3:13])  # 10 characters of the secret part
    assert echoed_credential(f"look: {piece} ok") == "OPENAI_API_KEY"


@pytest.mark.parametrize("offset", (0, 64))
def test_a_key_in_xz_data_in_base64_is_found_and_scrubbed(offset):
    """xz keeps so short an input as it is, so the run also holds the key's own base64, and a base64 run that holds
    it goes whole: a letter of the text glued on in front goes with it (offsets 0 and 64 have none)."""
    text = FILLER[:offset] + base64.b64encode(lzma.compress(KEY.encode())).decode() + " " + FILLER[offset:]
    assert readable_trace(text) and echoed_credential(text) == "OPENAI_API_KEY"
    out = scrub(text)
    assert echoed_credential(out) is None and not readable_trace(out)
    assert out.startswith(FILLER[:offset]) and out.endswith(FILLER[offset:])


_ORDINARY_85 = " and ".join(enc(b"hello world, this is ordinary text").decode()
                            for enc in (base64.b85encode, lambda b: base64.a85encode(b, adobe=True)))


@pytest.mark.parametrize("text", [
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 of the transcript",
    "Fish &amp; chips &lt;3 &#8212; caf&eacute; &#x263A; 0x1f 0x2e", "ｆｕｌｌ－ｗｉｄｔｈ ｔｅｘｔ 123",
    "co\u00adoper\u00adation and zero\u200bwidth", "tab\there\r\nnew line \x00 nul",
    "scores 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 100 200 255 0 17 42 99 12", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 QRZ",
    "aGVsbG8gd29ybGQsIHRoaXMgaXMgb3JkaW5hcnkgdGV4dA== (base64 of ordinary text)", "path C:\\100\\files \\163\\153",
    _ORDINARY_85 + " (base85 and Ascii85 of ordinary text)",
    'if(x<=y&&!z){return(a+b)*c;}else{f(g)-h;} | col | ~~done~~ | `a^b` | {"k":[1,2,{"v":null}]}',
    "0x73,      0x6b  (two bytes, far apart)", "73    6b    2d    70    72    6f    6a    2d (hex of 'sk-proj-' only)",
    "letters ['o', 'r', 'd', 'e', 'r', ' ', 'n', 'u', 'm', 'b', 'e', 'r'] and emoji \\U0001F600 \\U0010FFFF "
    "\\UFFFFFFFF",
    "Gur ntrag terrgf gur phfgbzre naq purpxf gur beqre ahzore (ROT13 of ordinary text)",
    " ".join(f"{b:08b}" for b in b"ordinary text in binary") + " and flags 00000000 11111111",
    "\n".join(f"{i + 1}: {b}" for i, b in enumerate(b"ordinary text, numbered")) + "\nscores: "
    + ", ".join(f"{s} (n={i})" for i, s in enumerate([3, 7, 7, 1, 9, 4, 4, 8, 2, 6, 5, 5, 7, 1, 3, 8, 9])),
    "".join(f"\\{ord(c):x} " for c in "ordinary text as CSS escapes") + " and lone surrogates " + "\\d800 " * 9,
    "ordinary text in octal: " + " ".join(f"{b:o}" for b in b"ordinary text")
    + "; octal modes 0o644 0o755 0o600 0o700 0o644 0o755 0o600 0o700",
    "ordinary text as UTF-16: " + "ordinary text".encode("utf-16-le").hex() + " and in base64: "
    + base64.b64encode("ordinary text".encode("utf-16-le")).decode() + " %u0041%u0042 =41=42=43 a=12 b=FF",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG; base64 groups: " + " ".join(
        base64.b64encode(b"ordinary text here").decode()[i:i + 4] for i in range(0, 24, 4)),
    "zlib: " + base64.b64encode(zlib.compress(b"ordinary text, compressed")).decode() + "\nbegin 644 notes\n"
    + binascii.b2a_uu(b"ordinary text, uuencoded").decode() + "`\nend\nTHE AGENT SAID HELLO\nNO-REPLY (SEE ABOVE)",
    "UTF-32: " + "ordinary text".encode("utf-32-le").hex()
    + " base32hex: " + base64.b32hexencode(b"ordinary text").decode()
    + " a bare uu line: " + binascii.b2a_uu(b"ordinary text, no header").decode() + "ID 4521, 0.125,0.250,0.375 (A-B)",
    "flag \U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F, hidden "
    + "".join(chr(0xE0000 + ord(c)) for c in "ordinary text") + ", version 1.2.3.4.5.6.7.8.9, address 10.0.0.1, "
    + str(int.from_bytes(b"ordinary text", "big")) + " and 1234567890123456789012 and 0.30000000000000004",
    "dates 2026-11-29, 11/29/2026; zero-padded 001 002 003 004 005 006 007 008 009; hex of base64 of ordinary text "
    + base64.b64encode(b"ordinary text").hex() + "; bzip2 " + base64.b64encode(bz2.compress(b"ordinary text")).decode()
    + "; xz " + base64.b64encode(lzma.compress(b"ordinary text")).decode(),
])
def test_ordinary_text_in_those_forms_is_left_alone(text):
    assert echoed_credential(text) is None and scrub(text) == text


@pytest.mark.parametrize("suffix", [".csv", ".ipynb", ".html", ".parquet", ".sqlite"])
@pytest.mark.parametrize("form", sorted(KEY_FORMS))
def test_the_results_check_finds_every_form_in_every_kind_of_file(tmp_path, form, suffix):
    text = placed(form, 7)
    path = tmp_path / f"out{suffix}"
    if suffix == ".csv":
        pd.DataFrame({"id": ["a"], "text": [text]}).to_csv(path, index=False)
    elif suffix == ".ipynb":  # notebooks keep non-ASCII as it is
        path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": [text]}]}, ensure_ascii=False),
                        encoding="utf-8")
    elif suffix == ".parquet":
        pd.DataFrame({"text": [text]}).to_parquet(path)
    elif suffix == ".sqlite":
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE t (v TEXT)")
        con.execute("INSERT INTO t VALUES (?)", (text,))
        con.commit()
        con.close()
    else:
        path.write_text(f"<html><body><p>{text}</p></body></html>", encoding="utf-8")
    (tmp_path / "clean.csv").write_text(FILLER, encoding="utf-8")
    assert [p.rsplit("/", 1)[1] for p in find_secret_leaks(tmp_path)] == [path.name]


@pytest.mark.parametrize("form", sorted(KEY_FORMS))
def test_a_server_echoing_the_key_in_a_form_leaves_it_in_no_row_cache_or_table(tmp_path, form, capsys):
    pytest.importorskip("aiohttp")
    from cfbench.judges import GenerationConfig, Request, run_requests
    from cfbench.judges.fakeserver import FakeOpenAIServer

    cache_path = tmp_path / "responses.sqlite"
    reqs = [Request(f"r{i}", ({"role": "user", "content": f"question {i}"},), GenerationConfig(max_tokens=64))
            for i in range(len(OFFSETS))]
    with FakeOpenAIServer() as srv:
        srv.script([f"echo-key-form:{form}@{off}" for off in OFFSETS])
        res = run_requests(f"openai:m@{srv.base_url}", reqs, cache=cache_path, progress=False, concurrency=1)
    assert not res.judgments.ok.any()
    assert res.judgments.error.str.contains("reply echoed a credential").all(), res.judgments.error.tolist()
    res.judgments.to_csv(tmp_path / "judged_rows.csv", index=False)
    con = sqlite3.connect(cache_path)
    dump = "\n".join(con.iterdump())
    con.close()
    cap = capsys.readouterr()
    for text in (dump, (tmp_path / "judged_rows.csv").read_text(encoding="utf-8"), cap.out + cap.err):
        assert not readable_trace(text) and echoed_credential(text) is None
    assert find_secret_leaks(tmp_path) == []


LOOSE_FORMS = {"upper": lambda k: k.upper(), "spaced": lambda k: " ".join(k),
               "groups": lambda k: " ".join(k[i:i + 7] for i in range(0, len(k), 7)),
               "hyphen groups": lambda k: "-".join(k[i:i + 5] for i in range(0, len(k), 5)),
               "bidi reversed": lambda k: "\u202e" + k[::-1] + "\u202c", "upper spaced": lambda k: " ".join(k.upper()),
               "doubled": lambda k: "".join(c + c for c in k),
               "doubled upper spaced": lambda k: " ".join(c + c for c in k.upper()),
               "reversed upper": lambda k: k[::-1].upper()}


@pytest.mark.parametrize("form", LOOSE_FORMS)
@pytest.mark.parametrize("offset", (0, 64))
def test_a_key_read_loosely_is_found_and_scrubbed(form, offset):
    """Forms a person reads as the key: another case, spaced out or grouped, reversed behind a bidi override
    (shown the right way round). Once they passed both the echo check and the scrubber."""
    text = FILLER[:offset] + LOOSE_FORMS[form](KEY) + " " + FILLER[offset:]
    assert echoed_credential(text) == "OPENAI_API_KEY"
    out = scrub(text)
    assert echoed_credential(out) is None and "<OPENAI_API_KEY>" in out
    assert FILLER[:offset] in out and FILLER[offset:].strip()[-30:] in out  # the text around it stays


def test_loose_readings_leave_ordinary_text_alone():
    for text in (FILLER, FILLER.upper(), " ".join(FILLER), "sk-proj- is the prefix of a project key", "HQ 4 LZ",
                 "".join(c + c for c in FILLER), "======== ++++  aabbccdd  " + " " * 16):
        assert echoed_credential(text) is None and scrub(text) == text


@pytest.mark.parametrize("form", ["base85", "ascii85"])
def test_a_key_beside_an_image_in_base64_is_still_found(form):
    # pieces of a long base64 run (a notebook's image) are not read as base85 or Ascii85; a key spelled so
    # beside one still is
    image = base64.b64encode(bytes(range(256)) * 24).decode()  # 8,192 characters, '/' and '+' among them
    text = f'{{"image/png": "{image}", "text/plain": "{KEY_FORMS[form](KEY)}"}}'
    assert echoed_credential(text) == "OPENAI_API_KEY"
    assert not readable_trace(scrub(text)) and image in scrub(text)


@pytest.mark.parametrize("form", ["base64", "hex", "base32", "decimal bytes"])
@pytest.mark.parametrize("offset", OFFSETS)
def test_a_spelling_written_backwards_is_found_and_scrubbed(form, offset):
    """The key's base64 (or hex, base32, decimal byte list) written backwards, inside ordinary text: until
    2026-11-29 only the key's own characters were looked for reversed, so these passed. The text around it
    is kept."""
    raw = KEY.encode()
    spelled = {"base64": base64.b64encode(raw).decode(), "hex": raw.hex(),
               "base32": base64.b32encode(raw).decode(), "decimal bytes": ", ".join(str(b) for b in raw)}[form]
    text = FILLER[:offset] + " ref " + spelled[::-1] + " end. " + FILLER
    assert KEY not in text and BODY[:8] not in text
    assert echoed_credential(text) == "OPENAI_API_KEY"
    out = scrub(text)
    assert "<OPENAI_API_KEY>" in out and echoed_credential(out) is None
    assert out.startswith(FILLER[:offset] + " ref ") and out.endswith(" end. " + FILLER)
    for view in (out, out[::-1]):
        assert spelled not in view and spelled[::-1] not in view


def test_ordinary_text_read_backwards_is_not_a_key():
    """Reading backwards finds nothing in text that holds no key, in either direction (no false alarm)."""
    text = FILLER + " Order 4521-8890-1123, call back at 0800 123 456. " + base64.b64encode(b"hello world!").decode()
    assert echoed_credential(text) is None and scrub(text) == text


def _caesar(text: str, k: int) -> str:
    """The test's own Caesar shift (or Atbash for ``k=None``) of the letters, case kept."""
    out = []
    for ch in text:
        if ch.isascii() and ch.isalpha():
            base = ord("A") if ch.isupper() else ord("a")
            i = ord(ch) - base
            out.append(chr(base + (25 - i if k is None else (i + k) % 26)))
        else:
            out.append(ch)
    return "".join(out)


@pytest.mark.parametrize("k", [1, 3, 7, 13, 20, 25, None], ids=lambda k: "atbash" if k is None else f"shift{k}")
@pytest.mark.parametrize("offset", OFFSETS)
def test_the_key_with_its_letters_shifted_is_found_and_scrubbed(k, offset):
    """Every Caesar shift of the key's letters and Atbash (the alphabet reversed), inside ordinary text: until
    2026-11-29 only ROT13 (and ROT47) was read, so the others passed. The text around it is kept."""
    spelled = _caesar(KEY, k)
    text = FILLER[:offset] + " token " + spelled + " end. " + FILLER
    assert BODY[:8] not in text
    assert echoed_credential(text) == "OPENAI_API_KEY"
    out = scrub(text)
    assert "<OPENAI_API_KEY>" in out and echoed_credential(out) is None and _caesar(BODY, k)[:8] not in out
    assert out.startswith(FILLER[:offset] + " token ") and out.endswith(" end. " + FILLER)
