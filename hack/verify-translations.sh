#!/usr/bin/env bash
# The Traditional Chinese translation (docs/zh-TW/) keeps step with the English it translates.
#
#   bash hack/verify-translations.sh              check this tree; exit 1 and name every problem
#   bash hack/verify-translations.sh --self-test  the negative tests: a temporary tree with a
#                                                 changed code block, a missing heading, a broken
#                                                 link, a missing translation, ... each reported
#
# The pairs (English -> translation):
#   - docs/tutorial/<file>.md -> docs/zh-TW/tutorial/<file>.md, for EVERY docs/tutorial/*.md
#     (README.md and each chapter): a chapter without a translation fails, unless it is in
#     PENDING below.
#   - README.md's quickstart -> docs/zh-TW/README.md. The quickstart is README.md from its title
#     to its first "## " heading (the intro), then the "## " sections named in README_SECTIONS,
#     in README.md's order; each section runs from its heading to the next heading of level 1
#     or 2. docs/zh-TW/README.md translates exactly those, in that order (its prose links to
#     the English README for the rest); a name in README_SECTIONS that README.md lacks fails.
#   - Any other docs/zh-TW/<path>.md -> docs/<path>.md, checked the same way when it exists
#     (optional); a translation with no English original fails.
# For every pair, it fails when
#   - headings: the translation's headings (ATX, "#" to "######", outside code blocks) do not
#     have the same levels in the same order as the English's (so the same number per level);
#     their text is translated, so only the levels are compared;
#   - code blocks: the fenced blocks (``` or ~~~) are not the same, in the same order, byte for
#     byte: fences, info string, indentation and every line (commands and example output stay
#     English, hence a change to an English chapter's code or output fails until the
#     translation has it too);
#   - links: a relative link of the translation (inline, image or reference definition, outside
#     code) points to no existing file or directory (the #anchor is not checked);
#   - the language line: the first non-blank line under the title, "**English** | [繁體中文](...)"
#     in the English (README.md, docs/tutorial/*), "[English](...) | **繁體中文**" in the
#     translation, does not link to the other file (English chapters in PENDING: not checked).
# A failure names the translation, the English file, the block or heading and their lines.
# Cheap (python3, no build); hack/test.sh runs it, with its self-test, before the build.
set -euo pipefail
cd "$(dirname "$0")/.."

# The English chapters (file names in docs/tutorial/) whose translation has not arrived yet.
# While a chapter is listed here its missing translation is not an error and links to its
# future translation are accepted; once its translation exists the check fails until it is
# removed from this list. Empty: every chapter is translated (issue 47). A new English
# chapter goes here until its translation lands.
PENDING=()

# README.md's "## " sections that docs/zh-TW/README.md translates after the intro, in
# README.md's order (the quickstart: the two commands, the layout, running the demo's
# controllers by hand).
README_SECTIONS=(
  "The two commands"
  "Layout"
  "Running the controllers"
)

# check ROOT [--pending FILE]... [--readme-section NAME]...: the check itself, on the tree at
# ROOT. Prints the problems to stderr, a summary to stdout; exits 1 on any problem.
check() {
  python3 - "$@" <<'PY'
import os, re, sys, urllib.parse

args = sys.argv[1:]
root, pending, sections = args[0], [], []
i = 1
while i < len(args):
    if args[i] == "--pending":
        pending.append(args[i + 1])
    elif args[i] == "--readme-section":
        sections.append(args[i + 1])
    else:
        sys.exit(f"verify-translations: unknown argument {args[i]!r}")
    i += 2

problems = []
def fail(msg):
    problems.append(msg)

def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)")

def parse(numbered):
    """numbered: [(line number, text)]. Returns (headings, blocks, prose): headings as
    (line, level, text), blocks as (first line, [lines with fences]), prose as the numbered
    lines outside code blocks."""
    headings, blocks, prose = [], [], []
    fence = None
    for n, line in numbered:
        if fence is None:
            m = FENCE.match(line)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
                blocks.append((n, [line]))
                continue
            prose.append((n, line))
            m = HEADING.match(line)
            if m:
                headings.append((n, len(m.group(1)), line.strip()))
        else:
            blocks[-1][1].append(line)
            s = line.strip()
            if s and set(s) == {fence[0]} and len(s) >= len(fence) and not line.startswith("    "):
                fence = None
    return headings, blocks, prose

def numbered(text):
    return list(enumerate(text.split("\n"), 1))

def readme_quickstart(text):
    """README.md's intro and README_SECTIONS, with their own line numbers."""
    lines = numbered(text)
    heads, _, _ = parse(lines)
    top = [(n, lvl, h) for n, lvl, h in heads if lvl <= 2]
    first_h2 = next((n for n, lvl, _ in top if lvl == 2), len(lines) + 1)
    keep = [l for l in lines if l[0] < first_h2]
    for name in sections:
        starts = [n for n, lvl, h in top if lvl == 2 and h[2:].strip() == name]
        if not starts:
            fail(f"README.md: no section '## {name}' (README_SECTIONS in hack/verify-translations.sh "
                 f"names the sections docs/zh-TW/README.md translates)")
            continue
        start = starts[0]
        end = next((n for n, _, _ in top if n > start), len(lines) + 1)
        keep += [l for l in lines if start <= l[0] < end]
    return keep

def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"

def compare(en_path, en_lines, tr_path, tr_lines):
    en_h, en_b, _ = parse(en_lines)
    tr_h, tr_b, _ = parse(tr_lines)
    # Headings: the same levels in the same order.
    if [l for _, l, _ in en_h] != [l for _, l, _ in tr_h]:
        def counts(hs):
            c = {}
            for _, l, _ in hs:
                c[l] = c.get(l, 0) + 1
            return ", ".join(f"{c[l]} x {'#' * l}" for l in sorted(c))
        k = 0
        while k < min(len(en_h), len(tr_h)) and en_h[k][1] == tr_h[k][1]:
            k += 1
        if k < len(en_h) and k < len(tr_h):
            detail = (f"heading {k + 1} is level {tr_h[k][1]} here (line {tr_h[k][0]}: {tr_h[k][2]!r}), "
                      f"level {en_h[k][1]} there (line {en_h[k][0]}: {en_h[k][2]!r})")
        elif k < len(en_h):
            detail = (f"heading {k + 1} of the English, {en_h[k][2]!r} (line {en_h[k][0]}), "
                      f"has no counterpart here")
        else:
            detail = f"heading {k + 1} here, {tr_h[k][2]!r} (line {tr_h[k][0]}), is not in the English"
        fail(f"{tr_path}: headings differ from {en_path}'s: {detail} "
             f"(here {counts(tr_h) or 'none'}; there {counts(en_h) or 'none'})")
    # Code blocks: the same, in the same order, byte for byte.
    for k, ((en_n, en_text), (tr_n, tr_text)) in enumerate(zip(en_b, tr_b), 1):
        if en_text == tr_text:
            continue
        j = 0
        while j < min(len(en_text), len(tr_text)) and en_text[j] == tr_text[j]:
            j += 1
        en_line = repr(en_text[j]) if j < len(en_text) else "(the block has ended)"
        tr_line = repr(tr_text[j]) if j < len(tr_text) else "(the block has ended)"
        fail(f"{tr_path}: code block {k} differs from {en_path}'s (line {en_n}): first at the block's "
             f"line {j + 1}:\n    {en_path}:{en_n + j}: {en_line}\n    {tr_path}:{tr_n + j}: {tr_line}\n"
             f"  (code blocks, commands and example output are copied from the English as they are)")
    if len(en_b) > len(tr_b):
        for k in range(len(tr_b), len(en_b)):
            fail(f"{tr_path}: code block {k + 1} of {en_path} (line {en_b[k][0]}) is missing: "
                 f"{plural(len(tr_b), 'code block')} here, {len(en_b)} there")
    elif len(tr_b) > len(en_b):
        for k in range(len(en_b), len(tr_b)):
            fail(f"{tr_path}: code block {k + 1} (line {tr_b[k][0]}) is not in {en_path}: "
                 f"{plural(len(tr_b), 'code block')} here, {len(en_b)} there")

SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)

def links(numbered_lines):
    """(line, target) of every link outside code blocks and code spans."""
    _, _, prose = parse(numbered_lines)
    by_line = dict(prose)
    last = max((n for n, _ in numbered_lines), default=0)
    # Code lines become empty lines, so that positions map back to line numbers.
    text = "\n".join(by_line.get(n, "") for n in range(1, last + 1))
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"<!--[\s\S]*?-->", blank, text)
    text = re.sub(r"(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)", blank, text)
    found = []
    for rx in (INLINE, REFDEF):
        for m in rx.finditer(text):
            found.append((text.count("\n", 0, m.start(1)) + 1, m.group(1).strip("<>")))
    return sorted(found)

def check_links(tr_path, tr_lines, allowed_missing):
    base = os.path.dirname(tr_path)
    for n, target in links(tr_lines):
        if SCHEME.match(target) or target.startswith("#"):
            continue
        path = urllib.parse.unquote(target.split("#", 1)[0].split("?", 1)[0])
        resolved = os.path.normpath(path.lstrip("/") if path.startswith("/") else os.path.join(base, path))
        if resolved.startswith(".."):
            fail(f"{tr_path}:{n}: link {target} leaves the repository")
        elif resolved in allowed_missing:
            continue
        elif not os.path.exists(os.path.join(root, resolved)):
            fail(f"{tr_path}:{n}: link {target} points to {resolved}, which does not exist")

def links_to(path, lines, other):
    """Whether the language line, the first non-blank line under path's title, links to other."""
    base = os.path.dirname(path)
    head = [l for l in lines[1:] if l[1].strip()][:1]
    if not head or "English" not in head[0][1] or "繁體中文" not in head[0][1]:
        return False
    for _, target in links(head):
        if SCHEME.match(target):
            continue
        if os.path.normpath(os.path.join(base, target.split("#", 1)[0])) == other:
            return True
    return False

def language_lines(en_path, en_lines, tr_path, tr_lines, english_too):
    if not links_to(tr_path, tr_lines, en_path):
        rel = os.path.relpath(en_path, os.path.dirname(tr_path))
        fail(f"{tr_path}: no language line under the title linking to {en_path} "
             f"('[English]({rel}) | **繁體中文**')")
    if english_too and not links_to(en_path, en_lines, tr_path):
        rel = os.path.relpath(tr_path, os.path.dirname(en_path))
        fail(f"{en_path}: no language line under the title linking to its translation {tr_path} "
             f"('**English** | [繁體中文]({rel})')")

def exists(rel):
    return os.path.isfile(os.path.join(root, rel))

tutorial = sorted(f for f in os.listdir(os.path.join(root, "docs/tutorial")) if f.endswith(".md"))
for p in pending:
    if p not in tutorial:
        fail(f"PENDING names {p}, which is not a chapter in docs/tutorial/")
pending_paths = {f"docs/zh-TW/tutorial/{p}" for p in pending}

pairs = []  # (English, translation, English lines, English has a language line to check)
if exists("README.md"):
    readme = read("README.md")
    pairs.append(("README.md", "docs/zh-TW/README.md", readme_quickstart(readme), True))
for f in tutorial:
    en = f"docs/tutorial/{f}"
    tr = f"docs/zh-TW/tutorial/{f}"
    if f in pending:
        if exists(tr):
            fail(f"{tr} exists, but PENDING in hack/verify-translations.sh still lists {f}: "
                 f"remove it from PENDING (checked below as any translation)")
        else:
            continue
    pairs.append((en, tr, numbered(read(en)), f not in pending))
# Other translations under docs/zh-TW/: optional, checked against docs/<same path>.
known = {tr for _, tr, _, _ in pairs}
for d, _, files in os.walk(os.path.join(root, "docs/zh-TW")):
    for f in files:
        tr = os.path.relpath(os.path.join(d, f), root)
        if not f.endswith(".md") or tr in known:
            continue
        en = "docs/" + os.path.relpath(tr, "docs/zh-TW")
        if exists(en):
            pairs.append((en, tr, numbered(read(en)), False))
        else:
            fail(f"{tr} translates nothing: there is no {en}")

checked = []
for en, tr, en_lines, english_too in pairs:
    if not exists(tr):
        what = "README.md's quickstart" if en == "README.md" else en
        fail(f"{what} has no translation: {tr} does not exist"
             + ("" if en == "README.md" else " (or list the chapter in PENDING in hack/verify-translations.sh)"))
        continue
    tr_lines = numbered(read(tr))
    compare(en, en_lines, tr, tr_lines)
    check_links(tr, tr_lines, pending_paths - {t for _, t, _, _ in pairs if exists(t)})
    language_lines(en, en_lines, tr, tr_lines, english_too)
    checked.append(tr)

if problems:
    for p in problems:
        print(p, file=sys.stderr)
    print(f"verify-translations: {plural(len(problems), 'problem')} (docs/zh-TW/ against the English; "
          f"hack/verify-translations.sh says what is compared)", file=sys.stderr)
    sys.exit(1)
todo = [p for p in pending if not exists(f"docs/zh-TW/tutorial/{p}")]
print(f"verify-translations: {len(checked)} translations have the English's headings, code blocks and "
      f"language links, and only links that resolve: {', '.join(checked)}"
      + (f"; still to translate (PENDING): {', '.join(todo)}" if todo else ""))
PY
}

# The real tree.
run_check() {
  local args=(.)
  local p s
  for p in "${PENDING[@]}"; do args+=(--pending "$p"); done
  for s in "${README_SECTIONS[@]}"; do args+=(--readme-section "$s"); done
  check "${args[@]}"
}

# --- The self-test -----------------------------------------------------------------------
# A small tree (README.md with a quickstart, docs/tutorial with a README and three chapters,
# the third pending, their translations, a crate file they link to), checked as it is (it
# passes) and then broken one way at a time: each break must fail with its message.
self_test() {
  local tmp failed=0
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/verify-translations.XXXXXX")
  trap 'rm -rf "$tmp"' RETURN
  local base=$tmp/base
  mkdir -p "$base/docs/tutorial" "$base/docs/zh-TW/tutorial" "$base/crates/x/src"
  echo "// x" >"$base/crates/x/src/lib.rs"
  cat >"$base/README.md" <<'EOF'
# proj

**English** | [繁體中文](docs/zh-TW/README.md)

The intro, [the tutorial](docs/tutorial/README.md).

## Quick start

```sh
make test
```

## Not translated

```sh
not in the translation
```

## Layout

```
src/    the code
```
EOF
  cat >"$base/docs/zh-TW/README.md" <<'EOF'
# proj

[English](../../README.md) | **繁體中文**

簡介，[教學](tutorial/README.md)；其餘見[英文 README](../../README.md)。

## 快速開始

```sh
make test
```

## 目錄結構

```
src/    the code
```
EOF
  cat >"$base/docs/tutorial/README.md" <<'EOF'
# Tutorial

**English** | [繁體中文](../zh-TW/tutorial/README.md)

[1. One](01-one.md), [2. Two](02-two.md), [3. Three](03-three.md).
EOF
  cat >"$base/docs/zh-TW/tutorial/README.md" <<'EOF'
# 教學

[English](../../tutorial/README.md) | **繁體中文**

[1. 一](01-one.md)、[2. 二](02-two.md)、[3. 三](03-three.md)。
EOF
  cat >"$base/docs/tutorial/01-one.md" <<'EOF'
# 1. One

**English** | [繁體中文](../zh-TW/tutorial/01-one.md)

Code: [`lib.rs`](../../crates/x/src/lib.rs).

## Run it

```sh
cargo run --example one
```

The output, with `[not a link](nowhere.md)` in code:

```text
line 1
line 2
line 3
```

### A detail

## What to try

Next: [2. Two](02-two.md).
EOF
  cat >"$base/docs/zh-TW/tutorial/01-one.md" <<'EOF'
# 1. 一

[English](../../tutorial/01-one.md) | **繁體中文**

程式碼：[`lib.rs`](../../../crates/x/src/lib.rs)。

## 執行

```sh
cargo run --example one
```

輸出，程式碼中的 `[not a link](nowhere.md)` 不算連結：

```text
line 1
line 2
line 3
```

### 細節

## 動手試試

下一章：[2. 二](02-two.md)。
EOF
  cat >"$base/docs/tutorial/02-two.md" <<'EOF'
# 2. Two

**English** | [繁體中文](../zh-TW/tutorial/02-two.md)

## Run it

```sh
cargo run --example two
```

## What happened

Next: [3. Three](03-three.md).
EOF
  cat >"$base/docs/zh-TW/tutorial/02-two.md" <<'EOF'
# 2. 二

[English](../../tutorial/02-two.md) | **繁體中文**

## 執行

```sh
cargo run --example two
```

## 發生了什麼

下一章：[3. 三](03-three.md)（尚未翻譯，在 PENDING 中）。
EOF
  cat >"$base/docs/tutorial/03-three.md" <<'EOF'
# 3. Three

Not translated yet.
EOF

  local pending=(--pending 03-three.md) sections=(--readme-section "Quick start" --readme-section "Layout")
  # case NAME EXPECTED-SUBSTRING [check arguments...]: copies the base tree to $tmp/case, runs
  # the shell snippet in $mutate there, and expects exit 1 with the substring in the output
  # (or, with EXPECTED "PASS", exit 0).
  local n=0
  case_() {
    local name=$1 expected=$2 mutate=$3
    shift 3
    n=$((n + 1))
    local dir=$tmp/case$n out rc
    cp -r "$base" "$dir"
    (cd "$dir" && eval "$mutate")
    if out=$(check "$dir" "$@" 2>&1); then rc=0; else rc=$?; fi
    if [ "$expected" = PASS ]; then
      if [ "$rc" = 0 ]; then echo "ok   $name"; return; fi
    elif [ "$rc" = 1 ] && grep -qF -- "$expected" <<<"$out"; then
      echo "ok   $name: $(grep -F -- "$expected" <<<"$out" | head -1)"
      return
    fi
    echo "FAIL $name: expected exit $([ "$expected" = PASS ] && echo 0 || echo 1) and $expected; got exit $rc:" >&2
    printf '%s\n' "$out" | sed 's/^/    /' >&2
    failed=1
  }

  case_ "the tree as it is passes" PASS : "${pending[@]}" "${sections[@]}"
  case_ "an English code block changed (the output), the translation not" \
    "docs/zh-TW/tutorial/01-one.md: code block 2 differs from docs/tutorial/01-one.md's (line 15): first at the block's line 3:" \
    "sed -i 's/^line 2\$/line 2, changed/' docs/tutorial/01-one.md" "${pending[@]}" "${sections[@]}"
  case_ "a code block's info string changed in the translation" \
    "docs/zh-TW/tutorial/02-two.md: code block 1 differs from docs/tutorial/02-two.md's (line 7)" \
    "sed -i 's/^\`\`\`sh\$/\`\`\`bash/' docs/zh-TW/tutorial/02-two.md" "${pending[@]}" "${sections[@]}"
  case_ "a code block missing from the translation" \
    "docs/zh-TW/tutorial/02-two.md: code block 2 of docs/tutorial/02-two.md (line 15) is missing: 1 code block here, 2 there" \
    "printf '\n\`\`\`sh\nmore\n\`\`\`\n' >>docs/tutorial/02-two.md" "${pending[@]}" "${sections[@]}"
  case_ "a heading missing from the translation" \
    "docs/zh-TW/tutorial/02-two.md: headings differ from docs/tutorial/02-two.md's: heading 3 of the English, '## What happened' (line 11), has no counterpart here (here 1 x #, 1 x ##; there 1 x #, 2 x ##)" \
    "sed -i '/^## 發生了什麼/d' docs/zh-TW/tutorial/02-two.md" "${pending[@]}" "${sections[@]}"
  case_ "a heading at another level in the translation" \
    "docs/zh-TW/tutorial/01-one.md: headings differ from docs/tutorial/01-one.md's: heading 3 is level 2 here (line 21: '## 細節'), level 3 there (line 21: '### A detail')" \
    "sed -i 's/^### 細節/## 細節/' docs/zh-TW/tutorial/01-one.md" "${pending[@]}" "${sections[@]}"
  case_ "a broken link in the translation" \
    "docs/zh-TW/tutorial/01-one.md:5: link ../../crates/x/src/lib.rs points to docs/crates/x/src/lib.rs, which does not exist" \
    "sed -i 's|(../../../crates/x/src/lib.rs)|(../../crates/x/src/lib.rs)|' docs/zh-TW/tutorial/01-one.md" \
    "${pending[@]}" "${sections[@]}"
  case_ "a missing translation" \
    "docs/tutorial/02-two.md has no translation: docs/zh-TW/tutorial/02-two.md does not exist" \
    "rm docs/zh-TW/tutorial/02-two.md; sed -i 's/、\[2. 二\](02-two.md)//' docs/zh-TW/tutorial/README.md; sed -i 's/\[2. 二\](02-two.md)/2/' docs/zh-TW/tutorial/01-one.md" \
    "${pending[@]}" "${sections[@]}"
  case_ "PENDING emptied while a chapter is untranslated: missing, and the link to it broken" \
    "docs/zh-TW/tutorial/02-two.md:13: link 03-three.md points to docs/zh-TW/tutorial/03-three.md, which does not exist" \
    : "${sections[@]}"
  case_ "PENDING emptied while a chapter is untranslated: the chapter named" \
    "docs/tutorial/03-three.md has no translation" : "${sections[@]}"
  case_ "a chapter translated but still in PENDING" \
    "docs/zh-TW/tutorial/03-three.md exists, but PENDING in hack/verify-translations.sh still lists 03-three.md" \
    "printf '# 3. 三\n\n[English](../../tutorial/03-three.md) | **繁體中文**\n\n尚未翻譯。\n' >docs/zh-TW/tutorial/03-three.md" \
    "${pending[@]}" "${sections[@]}"
  case_ "a translation of nothing" \
    "docs/zh-TW/tutorial/04-four.md translates nothing: there is no docs/tutorial/04-four.md" \
    "cp docs/zh-TW/tutorial/02-two.md docs/zh-TW/tutorial/04-four.md" "${pending[@]}" "${sections[@]}"
  case_ "the README quickstart's code block changed in README.md" \
    "docs/zh-TW/README.md: code block 2 differs from README.md's (line 21): first at the block's line 2:" \
    "sed -i 's|^src/    the code|src/    the source|' README.md" "${pending[@]}" "${sections[@]}"
  case_ "a section of README.md the translation lacks" \
    "docs/zh-TW/README.md: headings differ from README.md's: heading 4 of the English, '## Layout' (line 19), has no counterpart here" \
    : "${pending[@]}" --readme-section "Quick start" --readme-section "Not translated" --readme-section "Layout"
  case_ "README_SECTIONS names a section README.md does not have" \
    "README.md: no section '## Quickstart'" : "${pending[@]}" --readme-section "Quickstart" --readme-section "Layout"
  case_ "no language line in an English chapter" \
    "docs/tutorial/01-one.md: no language line under the title linking to its translation docs/zh-TW/tutorial/01-one.md" \
    "sed -i '/^\*\*English\*\* |/d' docs/tutorial/01-one.md" "${pending[@]}" "${sections[@]}"
  case_ "no language line in a translation" \
    "docs/zh-TW/README.md: no language line under the title linking to README.md" \
    "sed -i '/^\[English\]/d' docs/zh-TW/README.md" "${pending[@]}" "${sections[@]}"

  if [ "$failed" = 0 ]; then
    echo "verify-translations --self-test: all $n cases behave"
  else
    echo "verify-translations --self-test: FAILED" >&2
    return 1
  fi
}

case "${1:-}" in
  "") run_check ;;
  --self-test) self_test ;;
  *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
