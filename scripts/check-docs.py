#!/usr/bin/env python3
"""scripts/check-docs.py [--gatewayctl PATH] — the docs' checkable claims, checked.

make test runs it on the static binary (out/static/gatewayctl); DEVELOPERS.md,
"The docs are tested", lists what it checks:

- gatewayctl: every command, subcommand and --option README names exists in the
  binary's --help, and every subcommand --help lists is in README's reference;
- the manual page (board/debian/gatewayctl.1): every entry of its COMMANDS
  section is a command of the binary with options its --help lists, and every
  command and subcommand --help lists has an entry; every gatewayctl command
  docs/, board/ and provisioning/README.md give as code exists with its
  options; docs/troubleshooting.md's legend of LED and buzzer
  patterns has one row per stock pattern with its length, and their
  repeating set and priority order, as `config example` prints them;
- configuration: every section README lists is one `config example` prints, and
  every `[section] key` README names is a key of that section;
- pins: the pin tables of README and board/wiring.md agree with the Pi's 40-pin
  header (BCM -> physical pin, power and ground pins), each bus's table uses
  that bus's own pins, and the functions match `config example --board pi`;
- the PN532's interface switches (I0/I1) read the same wherever they are stated;
- the example's MQTT key_file is the credential board/gatewayd.service loads;
- relative links (and their #anchors) in README, DEVELOPERS.md, CHANGELOG.md,
  docs/ and board/ resolve; README names `make test` as the test command;
- citations: nothing in Sources/, Tests/, scripts/, docs/, board/,
  provisioning/, Fuzz/, Benchmarks/ or the top-level files cites the papers
  outside the repository (DESIGN.md, STYLE.md, COMPAT, shared/), and every
  cited repository file and section (`docs/formats.md §4`, `docs/design.md
  "Keys"`, `DEVELOPERS.md "Conventions" §13`) exists;
- docs/formats.md and Tests/Fixtures/compat.json: the vectors follow the
  page's rules, and so does its worked native command.

Exit 0 when all hold; otherwise each failure on its own line and exit 1.
"""

import argparse
import functools
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FAILURES = []


def fail(where, msg):
    FAILURES.append(f"{where}: {msg}")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


# --- gatewayctl ----------------------------------------------------------------

GLOBAL_OPTIONS = {"--help", "--json", "--socket", "--version", "--generate-completion-script"}
NAME = r"[a-z][a-z0-9-]*"


class Help:
    """The binary's --help pages, each run once."""

    def __init__(self, exe):
        self.exe = exe
        self.cache = {}

    def text(self, path):
        key = tuple(path)
        if key not in self.cache:
            r = subprocess.run([self.exe, *path, "--help"], capture_output=True, text=True, timeout=60)
            self.cache[key] = (r.returncode, r.stdout + r.stderr)
        return self.cache[key]

    def subcommands(self, path):
        """The names under SUBCOMMANDS: (up to the next unindented line); [] when there are none."""
        code, out = self.text(path)
        m = re.search(r"^SUBCOMMANDS:\n(.*?)(?=^\S|\Z)", out, re.M | re.S) if code == 0 else None
        return re.findall(rf"^  ({NAME})(?=\s|$)", m.group(1), re.M) if m else []

    def options(self, path):
        code, out = self.text(path)
        return set(re.findall(r"--[a-z][a-z0-9-]*", out)) if code == 0 else set()

    def known(self, path):
        """The options a command takes: the global ones, its own and its subcommands'."""
        subs = self.subcommands(path)
        return set(GLOBAL_OPTIONS).union(self.options(path), *(self.options(path + [s]) for s in subs))

    def paths(self):
        """Every command path --help lists, three levels deep (`keys otp new`), `help` included."""
        for top in self.subcommands([]):
            yield (top,)
            for sub in self.subcommands([top]):
                yield (top, sub)
                yield from ((top, sub, more) for more in self.subcommands([top, sub]))

    def commands(self):
        return [p for p in self.paths() if p[0] != "help"]


def words(segment):
    """Lower-case command words of a segment (not placeholders, options or values)."""
    out = []
    for tok in re.split(r"[\s()\[\]]+", segment):
        if re.fullmatch(NAME, tok):
            out.append(tok)
        elif tok:
            break
    return out


def check_options(where, text, known, what):
    for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
        if opt not in known:
            fail(where, what(opt))


def check_command_text(help_, where, text, top_level):
    """text: a command without the leading `gatewayctl` (one line of README)."""
    text = text.strip()
    m = re.match(rf"({NAME})\s*(.*)", text)
    if not m or m.group(1) not in top_level:
        fail(where, f"`gatewayctl {text}`: no subcommand {text.split()[0] if text else '(none)'!r} in gatewayctl --help")
        return
    top, rest = m.group(1), m.group(2)
    subs = help_.subcommands([top])
    paths = [[top]]
    if subs:
        # Alternatives at the top of the rest: "list | revoke … | expire …" or "status|clear".
        for n, seg in enumerate(re.split(r"\s*\|\s*", rest)):
            w = words(seg)
            if not w:
                continue
            cand = w[0]
            if cand not in subs and help_.text([top, cand])[0] == 0:
                subs = subs + [cand]  # a hidden subcommand (reader bench): not listed, but there
            if cand in subs:
                paths.append([top, cand])
                nested = help_.subcommands([top, cand])
                paths += [[top, cand, more] for more in w[1:] if more in nested]
            elif n == 0 and not rest.startswith(("-", "[", "(")):
                fail(where, f"`gatewayctl {text}`: {top} has no subcommand {cand!r} (it has {', '.join(subs)})")
        # "keys otp|command new|import|export": nested alternatives
        toks = rest.split()
        if len(toks) >= 2 and "|" in toks[0]:
            for a in (a for a in toks[0].split("|") if a in subs):
                nested = help_.subcommands([top, a])
                for b in toks[1].split("|"):
                    if re.fullmatch(NAME, b) and nested and b not in nested:
                        fail(where, f"`gatewayctl {top} {a} {b}`: not in gatewayctl {top} {a} --help")
    check_options(where, rest, set().union(*(help_.known(p) for p in paths)),
                  lambda opt: f"`gatewayctl {text}`: option {opt} is not in the help of {' '.join(paths[-1])}")


def code_commands(text):
    """(line, command without `gatewayctl`) for each gatewayctl command given as code: in an
    inline code span, or on a line of a code block (indented or fenced; after `$ `, `# `, `sudo`)."""
    fenced = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            m = re.match(rf"\s*(?:[$#] )?(?:sudo )?gatewayctl ((?:{NAME})(?:[^#\n]*))", line)
            if m:
                yield i, m.group(1).split("  ")[0]
        else:
            for m in re.finditer(rf"`(?:sudo )?gatewayctl ((?:{NAME})[^`]*)`", line):
                yield i, m.group(1)


def check_gatewayctl(help_, readme):
    top_level = help_.subcommands([])
    if not top_level:
        fail("gatewayctl", f"{help_.exe} --help lists no subcommands")
        return
    # 1. `gatewayctl …` anywhere in README (inline code and code blocks).
    for i, line in enumerate(readme.splitlines(), 1):
        for m in re.finditer(rf"gatewayctl ((?:{NAME})(?:[^`#\n]*))", line):
            # a code block's comment starts after two spaces
            check_command_text(help_, f"README.md:{i}", m.group(1).split("  ")[0], top_level)
    # 2. The reference section: each line of its code block, and the offline list.
    sec = section(readme, "## gatewayctl")
    if sec is None:
        fail("README.md", "no '## gatewayctl' reference section")
        return
    where = "README.md gatewayctl section"
    for line in sec.splitlines():
        if re.match(r"    [a-z]", line):
            check_command_text(help_, where, line.strip().split("   ")[0], top_level)
    for m in re.finditer(r"`([a-z][a-z0-9-]* [^`]*)`", sec):
        if m.group(1).split()[0] in top_level:
            check_command_text(help_, where, m.group(1), top_level)
    # 3. The help itself refers to no document outside the repository (every page, three levels).
    for path in help_.paths():
        help_.text(path)
    for path, (_, out) in list(help_.cache.items()):
        for bad in ("COMPAT §", "COMPAT.md", "DESIGN.md", "STYLE.md"):
            if bad in out:
                fail(f"gatewayctl {' '.join(path)} --help", f"refers to {bad!r}, which is not in this repository")
    # 4. Completeness: every subcommand (two levels) appears in the section.
    sec_words = set(re.findall(NAME, sec))
    for p in help_.commands():
        if len(p) == 1 and p[0] not in sec_words:
            fail(where, f"gatewayctl {p[0]} (in --help) is not in README's reference")
        # the subcommand on a line that names its command (or on a line of its own, after it)
        elif len(p) == 2 and not re.search(
                rf"(?<![\w-]){re.escape(p[0])}(?![\w-])[^\n]*?(?<![\w-]){re.escape(p[1])}(?![\w-])", sec):
            fail(where, f"gatewayctl {p[0]} {p[1]} (in --help) is not in README's reference")


# --- the manual page --------------------------------------------------------------

def troff_text(line):
    """A troff line without its macro, font escapes and quotes: `.B "tags revoke" \\fIUID\\fR` -> `tags revoke UID`."""
    line = re.sub(r"^\.[A-Z]{1,2}\s*", "", line)
    line = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\c", "", line)
    return line.replace("\\-", "-").replace("\\ ", " ").replace('"', "")


def check_manpage(help_, rel="board/debian/gatewayctl.1"):
    """The manual page's COMMANDS section against the binary, both ways: each
    `.TP` entry's tag line names a command the binary has (with options its
    --help lists), and every command and subcommand --help lists has an entry."""
    page, top_level = read(rel), help_.subcommands([])
    m = re.search(r"^\.SH COMMANDS\n(.*?)(?=^\.SH )", page, re.S | re.M)
    if not m:
        fail(rel, "no .SH COMMANDS section (one .TP entry per command)")
        # Still say which commands the page does not name at all.
        text = " ".join(troff_text(l) for l in page.splitlines())
        for path in help_.commands():
            if not re.search(r"(?<![\w-])" + r"\s+".join(map(re.escape, path)) + r"(?![\w-])", text):
                fail(rel, f"gatewayctl {' '.join(path)} (in --help) is not in the page")
        return
    lines = m.group(1).splitlines()
    named = set()
    for tag in (troff_text(n).strip() for line, n in zip(lines, lines[1:]) if line.strip() == ".TP"):
        where = f"{rel} COMMANDS entry `{tag}`"
        w = words(tag)
        if not w or w[0] not in top_level:
            fail(where, f"no command {w[0] if w else tag!r} in gatewayctl --help")
            continue
        path = [w[0]]
        for more in w[1:]:
            if more not in help_.subcommands(path):
                break
            path.append(more)
        subs, rest = help_.subcommands(path), w[len(path):]
        # a command with subcommands is named with one (except a default one: `provision --action N`)
        if subs and rest and rest[0] not in subs:
            fail(where, f"gatewayctl {' '.join(path)} has no subcommand {rest[0]!r} (it has {', '.join(subs)})")
        named.add(tuple(path))
        check_options(where, tag, help_.known(path),
                      lambda opt: f"option {opt} is not in gatewayctl {' '.join(path)} --help")
    for path in help_.commands():
        # a command whose subcommands are all listed counts as listed itself
        if path not in named and not any(n[: len(path)] == path for n in named):
            fail(rel, f"gatewayctl {' '.join(path)} (in --help) has no entry in COMMANDS")
# --- the LED and buzzer legend -------------------------------------------------------

def stock_patterns(example_text):
    """name -> [steps [(lines, ms)], repeat, priority] from config example's commented [feedback.NAME] tables."""
    out, cur = {}, None
    for line in example_text.splitlines():
        if m := re.match(r"^# \[feedback\.([a-z_]+)\]$", line):
            cur = m.group(1)
            out[cur] = [[], False, None]
        elif cur is None:
            continue
        elif m := re.match(r"^#\s+\{ on = \[([^\]]*)\], ms = (\d+) \},?$", line):
            out[cur][0].append((set(re.findall(r'"([a-z_]+)"', m.group(1))), int(m.group(2))))
        elif re.match(r"^# repeat = (true|false)$", line):
            out[cur][1] = line.endswith("true")
        elif re.match(r"^# priority = \d+$", line):
            out[cur][2] = int(line.split("=")[1])
        elif not line.startswith("#"):
            cur = None
    return out


def seconds(ms):
    return f"{ms / 1000:g} s"


def check_legend(example_text, rel="docs/troubleshooting.md"):
    """The legend of LED and buzzer patterns against the stock patterns the binary prints:
    one row per pattern, both ways; each row states the pattern's length (one pass);
    the repeating ones and the priority order are the binary's."""
    pats = stock_patterns(example_text)
    if len(pats) < 5 or any(p[2] is None or not p[0] for p in pats.values()):
        fail("config example", f"could not read the stock feedback patterns ({sorted(pats)})")
        return
    text = read(rel)
    rows = {m.group(1): " | ".join(row[1:]) for head, body, _ in tables(text) if head[0] == "Pattern"
            for row in body if (m := re.fullmatch(r"`([a-z_]+)`", row[0]))}
    if not rows:
        fail(rel, "no legend table (a `Pattern` column)")
        return
    for name in sorted(set(pats) - set(rows)):
        fail(rel, f"feedback pattern {name} (config example) has no row in the legend")
    for name in sorted(set(rows) - set(pats)):
        fail(rel, f"legend row `{name}` is not a stock feedback pattern")
    for name in sorted(set(rows) & set(pats)):
        total = sum(ms for _, ms in pats[name][0])
        if not re.search(rf"(?<![\d.]){re.escape(seconds(total))}", rows[name]):
            fail(rel, f"legend row `{name}`: one pass is {seconds(total)} (config example), the row does not say so")
    m = re.search(r"A repeating pattern \(([^)]*)\)", text)
    said = set(re.findall(r"`([a-z_]+)`", m.group(1))) if m else set()
    want = {n for n, p in pats.items() if p[1]}
    if said != want:
        fail(rel, f"repeating patterns: the text says {sorted(said)}, config example {sorted(want)}")
    m = re.search(r"From high to low: (.*?)\.\s", text, re.S)
    groups = [set(re.findall(r"`([a-z_]+)`", g)) for g in m.group(1).split(";")] if m else []
    prios = sorted({p[2] for p in pats.values()}, reverse=True)
    want_groups = [{n for n, p in pats.items() if p[2] == k} for k in prios]
    if groups != want_groups:
        fail(rel, f"priority order: the text says {[sorted(g) for g in groups]}, config example "
                  f"{[sorted(g) for g in want_groups]}")


# --- configuration -------------------------------------------------------------

def example(exe, board):
    r = subprocess.run([exe, "config", "example", "--board", board], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("config example", f"--board {board} exited {r.returncode}: {r.stderr.strip()}")
        return ""
    return r.stdout


def example_sections(text):
    """section name -> set of keys (commented-out ones included)."""
    out, cur = {}, None
    for line in text.splitlines():
        if m := re.match(r"^#?\s*\[\[?([a-z_][a-z0-9_.]*)\]\]?\s*$", line):
            cur = m.group(1)
            out.setdefault(cur, set())
        elif cur is not None and (m := re.match(r"^#?\s*([a-z_][a-z0-9_]*)\s*=", line)):
            out[cur].add(m.group(1))
    return out


def check_config(readme, secs):
    conf = section(readme, "## Configuration") or ""
    m = re.search(r"Sections:(.*?)\n\n", conf, re.S)
    if not m:
        fail("README.md", "the Configuration section lists no 'Sections:'")
        return
    listed = re.findall(r"`\[\[?([a-zA-Z_][a-zA-Z0-9_.]*)\]\]?`", m.group(1))
    if len(listed) < 10:
        fail("README.md", f"the Sections list names only {len(listed)} sections")
    for name in listed:
        if name.endswith(".NAME"):
            prefix = name[: -len("NAME")]
            if not any(s.startswith(prefix) for s in secs):
                fail("README.md Configuration", f"[{name}]: no section {prefix}… in config example")
        elif name not in secs:
            fail("README.md Configuration", f"[{name}] is not a section config example prints")
    for top in sorted({s.split(".")[0] for s in secs}):
        if not any(n == top or n.startswith(top + ".") for n in listed):
            fail("README.md Configuration", f"config example has [{top}…], README's section list does not")
    for sec, key in re.findall(r"`\[([a-z_][a-z0-9_.]*)\] ([a-z_][a-z0-9_]*)", readme):
        if sec not in secs:
            fail("README.md", f"`[{sec}] {key}`: no section [{sec}] in config example")
        elif key not in secs[sec]:
            fail("README.md", f"`[{sec}] {key}`: [{sec}] has no key {key} in config example")


# --- pins ----------------------------------------------------------------------

# The 40-pin header (Pi 1 B+ and later): physical pin -> BCM GPIO.
HEADER = {3: 2, 5: 3, 7: 4, 8: 14, 10: 15, 11: 17, 12: 18, 13: 27, 15: 22, 16: 23, 18: 24, 19: 10,
          21: 9, 22: 25, 23: 11, 24: 8, 26: 7, 27: 0, 28: 1, 29: 5, 31: 6, 32: 12, 33: 13, 35: 19,
          36: 16, 37: 26, 38: 20, 40: 21}
BCM_TO_PIN = {v: k for k, v in HEADER.items()}
POWER = {"3.3 V": {1, 17}, "3V3": {1, 17}, "5 V": {2, 4}, "GND": {6, 9, 14, 20, 25, 30, 34, 39}}
BUS_SIGNALS = {"SDA1": 2, "SCL1": 3, "SPI0 SCLK": 11, "SPI0 MISO": 9, "SPI0 MOSI": 10, "SPI0 CE0": 8,
               "SPI0 CE1": 7, "TXD": 14, "RXD": 15}
# PN532 pin -> the Pi signal it must meet.
PN532_TO_PI = {"SDA": "SDA1", "SCL": "SCL1", "SCK": "SPI0 SCLK", "MISO": "SPI0 MISO", "MOSI": "SPI0 MOSI",
               "SS (NSS)": "SPI0 CE0", "TXD": "RXD", "RXD": "TXD", "VCC": "3.3 V", "GND": "GND"}
# A section of config example --board pi -> the function its line drives ([[outputs]]: by its name).
SECTION_FUNCTIONS = {"indicators.green": "green", "indicators.red": "red", "indicators.buzzer": "buzzer",
                     "inputs.button": "button", "inputs.door_contact": "door_contact",
                     "inputs.request_to_exit": "request_to_exit"}
# Words of a pin table's function cell -> the function, first match wins.
CELL_FUNCTIONS = [("request to exit", "request_to_exit"), ("strike", "strike"), ("relay", "strike"),
                  ("green", "green"), ("red", "red"), ("buzzer", "buzzer"), ("button", "button"),
                  ("door contact", "door_contact")]


def tables(text):
    """Markdown tables as (header cells, [row cells], line number)."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| :]+\|$", lines[i + 1]):
            head = [c.strip() for c in lines[i].strip("|").split("|")]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([c.strip() for c in lines[j].strip("|").split("|")])
                j += 1
            out.append((head, rows, i + 1))
            i = j
        else:
            i += 1
    return out


def example_lines(pi_example):
    """function keyword -> GPIO number from `config example --board pi`."""
    out, cur, name = {}, None, None
    for line in pi_example.splitlines():
        if m := re.match(r"^#?\s*\[\[?([a-z_.]+)\]\]?", line):
            cur, name = m.group(1), None
            continue
        if m := re.match(r'^#?\s*name = "([a-z_]+)"', line):
            name = m.group(1)
        m = re.match(r'^#?\s*line = "GPIO(\d+)"', line)
        if m and cur and (key := (name or "strike") if cur == "outputs" else SECTION_FUNCTIONS.get(cur)):
            out[key] = int(m.group(1))
    return out


def check_pins(rel, text, lines_from_example):
    for head, rows, ln in tables(text):
        col = {h: i for i, h in enumerate(head)}
        pin_col = next((h for h in head if h.startswith("Header pin")), None)
        if pin_col is None:
            continue
        bcm_col = next((h for h in head if h.startswith("BCM")), None)
        pi_col = "Pi" if "Pi" in col else None
        for row in rows:
            where = f"{rel}:{ln} row '{row[0]}'"
            bcm, pi = (row[col[c]] if c else "" for c in (bcm_col, pi_col))
            pins = [int(p) for p in re.findall(r"\b(\d{1,2})\b", row[col[pin_col]])]
            gpios = [int(g) for g in re.findall(r"GPIO(\d+)", bcm) or re.findall(r"GPIO(\d+)", pi)]
            if gpios:
                if len(gpios) != len(pins):
                    fail(where, f"{len(gpios)} GPIOs but {len(pins)} header pins")
                for g, p in zip(gpios, pins):
                    if BCM_TO_PIN.get(g) != p:
                        fail(where, f"GPIO{g} is header pin {BCM_TO_PIN.get(g)}, the table says {p}")
                # functions against the example configuration
                parts = [s.strip() for s in row[0].split(" / ")]
                for part, g in zip(parts, gpios) if len(parts) == len(gpios) else ():
                    key = next((key for k, key in CELL_FUNCTIONS if k in part.lower()), None)
                    if key and key in lines_from_example and lines_from_example[key] != g:
                        fail(where, f"{part}: GPIO{g}, config example --board pi says GPIO{lines_from_example[key]}")
                    elif key and key not in lines_from_example:
                        fail(where, f"{part}: config example --board pi has no line for {key}")
            else:
                label = pi if pi_col else bcm
                labels = [s.strip() for s in label.split(" / ")]
                if len(labels) != len(pins):
                    if not any(k in label for k in POWER):
                        continue
                    labels = [next(k for k in POWER if k in label)] * len(pins)
                for lab, p in zip(labels, pins):
                    if lab in POWER and p not in POWER[lab]:
                        fail(where, f"{lab} is on header pins {sorted(POWER[lab])}, the table says {p}")
            if pi_col and head[0].startswith("PN532"):
                want = PN532_TO_PI.get(row[0])
                if want is None:
                    fail(where, f"unknown PN532 pin {row[0]!r}")
                elif pi != want:
                    fail(where, f"PN532 {row[0]} goes to {want}, the table says {pi}")
                if pi in BUS_SIGNALS and gpios and gpios[0] != BUS_SIGNALS[pi]:
                    fail(where, f"{pi} is GPIO{BUS_SIGNALS[pi]}, the table says GPIO{gpios[0]}")


# --- PN532 switches ------------------------------------------------------------

SWITCHES = {"I2C": ("1", "0"), "SPI": ("0", "1"), "HSU": ("0", "0")}


def bus_label(s):
    found = re.findall(r"I²C|I2C|SPI|HSU|UART", s)
    return {"I²C": "I2C", "UART": "HSU"}.get(found[-1], found[-1]) if found else None


def check_switches(rel, text):
    for m in re.finditer(r"I0=([01]),? I1=([01])", text):
        lab = bus_label(text[max(0, m.start() - 40): m.start()])
        line = text.count("\n", 0, m.start()) + 1
        if lab is None:
            fail(f"{rel}:{line}", "I0/I1 setting with no bus named before it")
        elif m.groups() != SWITCHES[lab]:
            fail(f"{rel}:{line}", f"{lab} is I0={SWITCHES[lab][0]} I1={SWITCHES[lab][1]}, "
                                  f"the text says I0={m.group(1)} I1={m.group(2)}")
        s = re.match(r"[\s*]*\(SEL0 (ON|OFF),\s+SEL1 (ON|OFF)\)", text[m.end(): m.end() + 30])
        if s and tuple("1" if x == "ON" else "0" for x in s.groups()) != m.groups():
            fail(f"{rel}:{line}", "SEL0/SEL1 do not match I0/I1")
    for m in re.finditer(r"I0 I1 = ((?:[01] [01] (?:HSU|I²C|SPI),? ?)+)", text):
        for a, b, lab in re.findall(r"([01]) ([01]) (HSU|I²C|SPI)", m.group(1)):
            lab = {"I²C": "I2C"}.get(lab, lab)
            if (a, b) != SWITCHES[lab]:
                fail(rel, f"'I0 I1 = …': {lab} given as {a} {b}")


# --- the key's credential --------------------------------------------------------

def check_credential(pi_example):
    if not re.search(r"^LoadCredential=door\.key:\S+$", read("board/gatewayd.service"), re.M):
        fail("board/gatewayd.service", "no LoadCredential=door.key:…")
        return
    tls = pi_example.split("[mqtt.tls]", 1)[1].split("\n[", 1)[0] if "[mqtt.tls]" in pi_example else ""
    m = re.search(r'^#?\s*key_file = "([^"]+)"', tls, re.M)
    want = "/run/credentials/gatewayd.service/door.key"
    if not m or m.group(1) != want:
        fail("config example [mqtt.tls]", f"key_file should be {want} (the unit's credential), is {m.group(1) if m else 'absent'}")
    if want not in read("provisioning/firstboot/doorgateway-firstboot.sh"):
        fail("provisioning/firstboot/doorgateway-firstboot.sh", f"first boot does not set key_file to {want}")


# --- links and references ----------------------------------------------------------

def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text):
    return {slug(h) for h, _, _ in headings(text)}


def check_links(rel, text):
    base = os.path.dirname(rel)
    body = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", body):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(ROOT, base, path)) if path else os.path.join(ROOT, rel)
        if not os.path.exists(full):
            fail(rel, f"link to {target}: no such file")
            continue
        if anchor and full.endswith(".md") and anchor not in anchors(repo_text(os.path.relpath(full, ROOT))):
            fail(rel, f"link to {target}: no heading #{anchor}")


# --- citations: what the code and the docs cite is in the repository -------------

# Where citations are held to the repository (every file under these, and these files).
CITING_TREES = ["Sources", "Tests", "scripts", "docs", "board", "provisioning", "Fuzz", "Benchmarks"]
CITING_FILES = ["Package.swift", "Makefile", "README.md", "DEVELOPERS.md", "CHANGELOG.md"]
# Papers that live outside the repository (the product's first notes): citing them fails.
OUTSIDE = re.compile(r"\b(?:DESIGN|STYLE|COMPAT)\.md\b|\bCOMPAT\b|(?:\.\./|/work/)shared/|\bshared/(?:vectors|notes)/")
# ... except the names `gatewayctl fleet push` prints for the two remote keys (the program's
# output, asserted by its tests and quoted by docs/security.md): docs/formats.md says that
# COMPAT §3 and §5 are its own §3 and §5, and this check holds it to saying so.
PRINTED = re.compile(r"\b(?:otp|command) key \(COMPAT §([35])\)")
# A cited repository file, then optionally a section: `docs/formats.md §4`,
# `docs/design.md "Keys"`, `DEVELOPERS.md "Conventions" §13`, `docs/formats.md §1, §4`.
CITED = re.compile(
    r"(?<![\w./$-])((?:docs|board|provisioning|scripts|Tests|Sources|Fuzz|Benchmarks)/[\w.+/-]*\.(?:md|swift|py|sh|json)"
    r"|DEVELOPERS\.md|README\.md|CHANGELOG\.md)(?![\w/-])"
    r'(?:,? "([^"\n$/]+)")?'
    r"((?:,? §\d+)(?:(?:, | and | or |/)§\d+)*)?")
CODE_SUFFIXES = (".swift", ".h", ".c", ".sh", ".modulemap", ".toml", ".conf", ".acl", ".service")


def citing_files():
    for tree in CITING_TREES:
        for d, dirs, files in os.walk(os.path.join(ROOT, tree)):
            dirs[:] = sorted(x for x in dirs if x not in (".build", "corpus"))
            for f in sorted(files):
                full = os.path.join(d, f)
                try:
                    with open(full, encoding="utf-8") as fh:
                        yield os.path.relpath(full, ROOT), fh.read()
                except (UnicodeDecodeError, OSError):
                    continue  # binary fixtures (device trees, dumps)
    for rel in CITING_FILES:
        yield rel, read(rel)


def cited_text(rel, text):
    """(line number, text) where a citation may stand: all of a doc or a Python file; in code
    (Swift, C, shell, Makefile) the comments only, so a path a command works on is not taken
    for a citation (scripts/arm64/inside.sh's sed patches a file of swift-log's checkout)."""
    code = rel.endswith(CODE_SUFFIXES) or os.path.basename(rel) == "Makefile"
    for i, line in enumerate(text.splitlines(), 1):
        if not code:
            yield i, line
        elif m := re.search(r"(?:(?:^|\s)(?://|#)|^\s*\*|^\s*/\*)(.*)$", line):
            yield i, m.group(1)


def headings(text):
    """Heading texts (without #, backticks or link brackets) with their offsets, code blocks skipped."""
    out, in_code, pos = [], False, 0
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"^#{1,6} ", line):
            out.append((re.sub(r"[`\[\]]", "", line.lstrip("#")).strip(), pos, len(line) - len(line.lstrip("#"))))
        pos += len(line)
    return out


def find_section(text, name):
    """The text of the section whose heading is `name` (or starts with it, then a non-word
    character: "M3" names "## M3 — one phone key…"), up to the next heading of its level; else
    the paragraph or list item that starts with `name` in bold ("- **Lockdown is never changed
    by a schedule.**"), up to the next heading; None."""
    hs = headings(text)
    for k, (h, at, level) in enumerate(hs):
        labels = [x.strip().lower() for x in h.split(" — ")[0].split(" / ")]  # "L-2 / L8 — …"
        if name.lower() in labels or re.match(re.escape(name.lower()) + r"(?!\w)", h.lower()):
            end = next((a for (_, a, lv) in hs[k + 1:] if lv <= level), len(text))
            return text[at:end]
    if m := re.search(r"(?m)^(?:[-*] |\d+\. )?\*\*" + re.escape(name) + r"(?!\w)", text):
        end = next((a for (_, a, _) in hs if a > m.start()), len(text))
        return text[m.start():end]
    return None


def has_numbered(text, n):
    """A heading "N. …" or a list item "N. …" in `text`."""
    return re.search(rf"(?m)^(?:#{{1,6}} )?{n}\. ", text) is not None


@functools.cache
def repo_text(rel):
    return read(rel) if os.path.isfile(os.path.join(ROOT, rel)) else None


def check_citations():
    for rel, text in citing_files():
        for i, line in cited_text(rel, text):
            allowed = [m.span() for m in PRINTED.finditer(line)]
            # this file names the outside papers to refuse them
            for m in OUTSIDE.finditer(line) if rel != "scripts/check-docs.py" else ():
                if not any(a <= m.start() < b for a, b in allowed):
                    fail(f"{rel}:{i}", f"cites {m.group(0)!r}, which is not in this repository "
                                       "(docs/design.md, docs/formats.md, DEVELOPERS.md \"Conventions\")")
            for m in CITED.finditer(line):
                path, name, numbers = m.groups()
                if os.path.normpath(path) == os.path.normpath(rel) and not (name or numbers):
                    continue
                doc = repo_text(path)
                if doc is None:
                    if not os.path.isdir(os.path.join(ROOT, path)):
                        fail(f"{rel}:{i}", f"cites {path}, which does not exist")
                    continue
                where = find_section(doc, name) if name else doc
                if where is None:
                    fail(f"{rel}:{i}", f"cites {path} \"{name}\": no such section")
                    continue
                cited = f'{path} "{name}"' if name else path
                for n in re.findall(r"§(\d+)", numbers or ""):
                    if not has_numbered(where, n):
                        fail(f"{rel}:{i}", f"cites {cited} §{n}: no such section")
    # The printed names resolve: formats.md has §3 and §5 and says they are COMPAT §3 and §5.
    formats = repo_text("docs/formats.md") or ""
    for n, printed in (("3", "otp key (COMPAT §3)"), ("5", "command key (COMPAT §5)")):
        if not has_numbered(formats, n) or f"`{printed}`" not in formats:
            fail("docs/formats.md", f"gatewayctl prints `{printed}`: §{n} and that name must be here")


# --- the formats page and its vectors ----------------------------------------------

def check_formats(rel="docs/formats.md", vectors="Tests/Fixtures/compat.json"):
    """Recomputes Tests/Fixtures/compat.json from the rules docs/formats.md states (HMAC-SHA256,
    base64url, percent-encoding, the OTP block's layout and AES-128-ECB, dump sizes and UID check
    bytes) and the page's worked native command, so the page and the vectors cannot drift."""
    import base64
    import hashlib
    import hmac
    import json
    from urllib.parse import quote

    def mac(key_hex, text):
        return hmac.new(bytes.fromhex(key_hex), text.encode(), hashlib.sha256).digest()

    for must in (rel, vectors):
        if not os.path.isfile(os.path.join(ROOT, must)):
            fail(must, "missing: the formats the code cites and their vectors live here")
            return
    v = json.loads(read(vectors))
    where = f"{vectors} vs {rel}"
    for t in v["tags_v1"] + v["tags_v2"]:
        signed = f"idx={t['idx']}&ts={t['ts']}"
        url = f"smp://action?{signed}&sig={mac(t['secret'], signed).hex()}"  # §1
        if "uid" in t:  # §4
            u = mac(t["secret"], f"v2|{t['uid'].upper()}|{signed}")[:16]
            url += "&u=" + base64.urlsafe_b64encode(u).decode().rstrip("=")
            tlv = bytes.fromhex(t["ndef_tlv"])
            if len(tlv) != t["ndef_bytes"] or t["ndef_bytes"] > 144 or tlv[-1] != 0xFE:
                fail(where, f"§4: {t['uid']}'s TLV is {len(tlv)} bytes, ndef_bytes {t['ndef_bytes']}, "
                            "NTAG213 holds 144 with the terminator")
        if url != t["url"]:
            fail(where, f"§1/§4: the rules give {url}, the vector is {t['url']}")
        if url.encode().hex() not in t["ndef_tlv"]:
            fail(where, f"§1: the NDEF TLV of {t['url']} does not carry it after prefix code 0x00")
    for sh in v["share"]:  # §2
        link = f"smpshare://secret?idx={sh['idx']}&key={sh['key']}&label={quote(sh['label'], safe='-._~')}"
        if link != sh["link"]:
            fail(where, f"§2: the rules give {link}, the vector is {sh['link']}")
    for o in v["otp"]:  # §3
        plain = bytes.fromhex(o["plain"])
        if int.from_bytes(plain[4:8], "little") != o["ts"]:
            fail(where, f"§3: bytes 4-7 of {o['plain']} are not ts {o['ts']} little-endian")
        if (sum(plain[:15]) % 256 == plain[15]) == bool(o.get("bad_checksum")):
            fail(where, f"§3: the checksum byte of {o['plain']} is not what bad_checksum says")
        r = subprocess.run(["openssl", "enc", "-d", "-aes-128-ecb", "-nopad", "-K", o["key"]],
                           input=bytes.fromhex(o["otp_auth"]), capture_output=True, timeout=30)
        if r.returncode != 0 or r.stdout != plain:
            fail(where, f"§3: AES-128-ECB of {o['otp_auth']} under {o['key']} is not {o['plain']} "
                        f"({r.stderr.decode(errors='replace').strip() or r.stdout.hex()})")
        if "message" in o and not re.fullmatch(r'\{"command": \d+, "otp-auth": "' + o["otp_auth"] + r'"\}', o["message"]):
            fail(where, f"§3: {o['message']} is not a compat command carrying its block")
    sizes = {"NTAG213": 180, "NTAG215": 540, "NTAG216": 924}
    for d in v["dumps"]:  # §6
        b = bytes.fromhex(d["hex"])
        uid = (b[0:3] + b[4:8]).hex().upper() if len(b) > 8 else ""
        if len(b) != d["bytes"] or sizes.get(d["type"]) != len(b) or uid != d["uid"].upper() \
                or b[3] != 0x88 ^ b[0] ^ b[1] ^ b[2] or b[8] != b[4] ^ b[5] ^ b[6] ^ b[7] \
                or d["url"].encode() not in b:
            fail(where, f"§6: the {d['type']} dump of {d['uid']} is not {sizes.get(d['type'])} bytes of pages "
                        "with that UID, its check bytes and its URL")
    # §5's worked example: HKDF-SHA256 (salt doorgateway-command-v1, info = device id) and the MAC.
    text = read(rel)
    m = re.search(r"site key = bytes 00 01 02 … 1f,\s+device `([^`]+)`, action (\d+), ts (\d+), nonce\s+`([0-9a-f]{32})`"
                  r".*?door key\s+([0-9a-f]{64})\s+MAC'd\s+(\S+)\s+mac\s+([0-9a-f]{64})", text, re.S)
    if not m:
        fail(rel, "§5: the worked example (site key, device, action, ts, nonce; door key, MAC'd, mac) is not found")
        return
    device, action, ts, nonce, door_key, macd, mac_hex = m.groups()
    prk = hmac.new(b"doorgateway-command-v1", bytes(range(32)), hashlib.sha256).digest()
    key = hmac.new(prk, device.encode() + b"\x01", hashlib.sha256).digest()
    want = f"cmd1|{device}|{action}|{ts}|{nonce}"
    if key.hex() != door_key or macd != want or hmac.new(key, want.encode(), hashlib.sha256).hexdigest() != mac_hex:
        fail(rel, f"§5: the worked example does not follow its own rules (door key {key.hex()}, MAC'd {want})")


def section(text, heading):
    i = text.find("\n" + heading)
    if i < 0:
        return None
    j = text.find("\n## ", i + 1)
    return text[i: j if j > 0 else len(text)]


def md_files(folder):
    return sorted(f"{folder}/{f}" for f in os.listdir(os.path.join(ROOT, folder)) if f.endswith(".md"))


USER_DOCS = ["README.md", "DEVELOPERS.md", "CHANGELOG.md", "board/wiring.md", "board/libnfc.md",
             "docs/pi-image.md", "docs/reliability.md"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatewayctl", default=os.path.join(ROOT, "out/static/gatewayctl"))
    exe = os.path.abspath(ap.parse_args().gatewayctl)
    if not os.access(exe, os.X_OK):
        print(f"check-docs: {exe} is missing (make static, or --gatewayctl .build/debug/gatewayctl)", file=sys.stderr)
        return 2
    readme = read("README.md")
    pi, sim = example(exe, "pi"), example(exe, "sim")
    secs = example_sections(pi)
    for k, v in example_sections(sim).items():
        secs.setdefault(k, set()).update(v)

    help_ = Help(exe)
    check_gatewayctl(help_, readme)
    check_manpage(help_)
    # Every gatewayctl command the other docs give as code (inline or a code block) exists,
    # with its options: what a person at the door types (docs/troubleshooting.md above all).
    for rel in md_files("docs") + md_files("board") + ["provisioning/README.md"]:
        for i, cmd in code_commands(read(rel)):
            check_command_text(help_, f"{rel}:{i}", cmd, help_.subcommands([]))
    check_config(readme, secs)
    from_example = example_lines(pi)
    for want in ("strike", "green", "red", "buzzer", "button", "door_contact"):
        if want not in from_example:
            fail("config example --board pi", f"no GPIO line found for {want}")
    for rel in ("README.md", "board/wiring.md"):
        check_pins(rel, read(rel), from_example)
    m = re.search(r'^connstring = "([^"]+)"', pi, re.M)
    if not m or m.group(1) not in read("board/wiring.md") or m.group(1) not in read("board/libnfc.md"):
        fail("board/wiring.md, board/libnfc.md", f"the example's connstring {m.group(1) if m else '?'} is not named")

    for rel in sorted(set(USER_DOCS + md_files("docs") + md_files("board"))):
        text = read(rel)
        check_links(rel, text)
        if rel in USER_DOCS or rel.startswith("board/"):
            check_switches(rel, text)
    check_switches("provisioning/README.md", read("provisioning/README.md"))
    # Sources, Tests, scripts, the docs: every citation is of a file and section in the repository.
    check_citations()
    check_formats()
    check_credential(pi)
    check_legend(pi)
    if not re.search(r"`make test`", readme):
        fail("README.md", "does not name `make test` as the test command")

    if FAILURES:
        for f in FAILURES:
            print(f"check-docs: {f}", file=sys.stderr)
        print(f"check-docs: {len(FAILURES)} problem(s)", file=sys.stderr)
        return 1
    print("check-docs: README's gatewayctl commands, config sections and keys, pin tables, PN532 switches, "
          "the key's credential, links: all agree with the code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
