//! The `pattern`s of a schema: the simple regular expressions CRDs use (character
//! classes with quantifiers, anchors, literal text, groups with alternatives), parsed,
//! matched and used to generate a value that matches.
//!
//! Why not a regex crate: generating a matching string needs the expression's structure,
//! which a matcher does not expose, and the subset is small. An expression outside it
//! (back-references, look-arounds, word boundaries, flags, Unicode classes) is refused:
//! the field is skipped, and the workload says so, rather than a guess sent to the API
//! server. Like Kubernetes' (ECMA-262) patterns, an expression matches anywhere in the
//! text unless anchored.

use std::cell::Cell;

/// How many atoms the matcher tries before it gives up on a text.
pub(crate) const MATCH_STEPS: usize = 200_000;

/// A parsed pattern.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    alternatives: Vec<Seq>,
}

type Seq = Vec<Piece>;

/// An atom and how many times it repeats.
#[derive(Debug, Clone)]
struct Piece {
    node: Node,
    min: usize,
    max: Option<usize>,
}

#[derive(Debug, Clone)]
enum Node {
    Literal(char),
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    Any,
    Start,
    End,
    Group(Vec<Seq>),
}

impl Pattern {
    /// Parses `source`; the error says what is outside the supported subset.
    pub(crate) fn parse(source: &str) -> Result<Self, String> {
        let mut parser = Parser {
            chars: source.chars().collect(),
            at: 0,
        };
        let alternatives = parser.alternatives()?;
        if parser.at < parser.chars.len() {
            return Err(format!("unbalanced `)` at {}", parser.at));
        }
        Ok(Self { alternatives })
    }

    /// Whether `text` matches somewhere (anchors anchor); `false` also when the matcher
    /// gave up (see [`Pattern::matches`]).
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.matches(text) == Some(true)
    }

    /// Whether `text` matches somewhere, or `None` when the backtracking matcher gave up
    /// after [`MATCH_STEPS`] steps (nested quantifiers on a long text that does not
    /// match can take exponential time).
    pub(crate) fn matches(&self, text: &str) -> Option<bool> {
        let text: Vec<char> = text.chars().collect();
        let steps = Cell::new(MATCH_STEPS);
        let found = (0..=text.len())
            .any(|start| match_alts(&self.alternatives, &text, start, &steps, &mut |_| true));
        (found || steps.get() > 0).then_some(found)
    }

    /// A string that matches, of `min_len..=max_len` characters, other than each of
    /// `avoid`; `variant` picks other characters and branches. `None` when none is found.
    pub(crate) fn generate(
        &self,
        variant: usize,
        min_len: usize,
        max_len: Option<usize>,
        avoid: &[&str],
    ) -> Option<String> {
        for extra in 0..=min_len.max(1) + 8 {
            for shortest in [false, true] {
                for v in variant..variant + 8 {
                    let mut out = String::new();
                    let mut extra_left = extra;
                    gen_alts(&self.alternatives, v, shortest, &mut extra_left, &mut out);
                    let len = out.chars().count();
                    if len >= min_len
                        && max_len.is_none_or(|max| len <= max)
                        && !avoid.contains(&out.as_str())
                        && self.is_match(&out)
                    {
                        return Some(out);
                    }
                }
            }
        }
        None
    }
}

fn gen_alts(alts: &[Seq], variant: usize, shortest: bool, extra: &mut usize, out: &mut String) {
    let seq = &alts[variant % alts.len()];
    for piece in seq {
        let mut count = if shortest || piece.max == Some(0) {
            piece.min
        } else {
            piece.min.max(1)
        };
        if *extra > 0 && piece.max.is_none_or(|max| count < max) {
            let room = piece.max.map_or(*extra, |max| (max - count).min(*extra));
            count += room;
            *extra -= room;
        }
        for i in 0..count {
            match &piece.node {
                Node::Literal(c) => out.push(*c),
                Node::Any => out.push(['a', 'b', 'c'][(variant + i) % 3]),
                Node::Start | Node::End => {}
                Node::Class { ranges, negated } => out.push(class_char(ranges, *negated, variant)),
                Node::Group(alts) => {
                    gen_alts(alts, variant / alts.len().max(1), shortest, extra, out)
                }
            }
        }
    }
}

/// A character of a class: the first of each range, then the second, `variant` picking.
fn class_char(ranges: &[(char, char)], negated: bool, variant: usize) -> char {
    if negated {
        let pool = "abcxyz019-_.ABC";
        return pool
            .chars()
            .filter(|c| !ranges.iter().any(|(lo, hi)| (lo..=hi).contains(&c)))
            .cycle()
            .nth(variant)
            .unwrap_or('~');
    }
    let mut pool: Vec<char> = ranges.iter().map(|(lo, _)| *lo).collect();
    pool.extend(
        ranges
            .iter()
            .filter(|(lo, hi)| lo < hi)
            .filter_map(|(lo, _)| char::from_u32(*lo as u32 + 1)),
    );
    pool[variant % pool.len()]
}

/// The matcher's arguments besides the position and the continuation.
type Steps = Cell<usize>;

fn match_alts(
    alts: &[Seq],
    t: &[char],
    pos: usize,
    steps: &Steps,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    alts.iter().any(|seq| match_seq(seq, t, pos, steps, k))
}

fn match_seq(
    seq: &[Piece],
    t: &[char],
    pos: usize,
    steps: &Steps,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    match seq.split_first() {
        None => k(pos),
        Some((piece, rest)) => match_piece(piece, 0, t, pos, steps, &mut |q| {
            match_seq(rest, t, q, steps, k)
        }),
    }
}

fn match_piece(
    piece: &Piece,
    count: usize,
    t: &[char],
    pos: usize,
    steps: &Steps,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if piece.max.is_none_or(|max| count < max)
        && match_node(&piece.node, t, pos, steps, &mut |q| {
            (q != pos || count < piece.min) && match_piece(piece, count + 1, t, q, steps, k)
        })
    {
        return true;
    }
    count >= piece.min && k(pos)
}

fn match_node(
    node: &Node,
    t: &[char],
    pos: usize,
    steps: &Steps,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if steps.get() == 0 {
        return false;
    }
    steps.set(steps.get() - 1);
    let next = t.get(pos).copied();
    match node {
        Node::Literal(c) => next == Some(*c) && k(pos + 1),
        Node::Any => next.is_some_and(|c| c != '\n') && k(pos + 1),
        Node::Class { ranges, negated } => {
            next.is_some_and(|c| ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated)
                && k(pos + 1)
        }
        Node::Start => pos == 0 && k(pos),
        Node::End => pos == t.len() && k(pos),
        Node::Group(alts) => match_alts(alts, t, pos, steps, k),
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

const DIGITS: &[(char, char)] = &[('0', '9')];
const WORD: &[(char, char)] = &[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')];
const SPACE: &[(char, char)] = &[(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')];

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += 1;
        c
    }

    fn alternatives(&mut self) -> Result<Vec<Seq>, String> {
        let mut alts = vec![self.seq()?];
        while self.peek() == Some('|') {
            self.at += 1;
            alts.push(self.seq()?);
        }
        Ok(alts)
    }

    fn seq(&mut self) -> Result<Seq, String> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let node = self.atom()?;
            let (min, max) = self.quantifier()?;
            seq.push(Piece { node, min, max });
        }
        Ok(seq)
    }

    fn atom(&mut self) -> Result<Node, String> {
        let at = self.at;
        Ok(match self.next().expect("seq peeked") {
            '^' => Node::Start,
            '$' => Node::End,
            '.' => Node::Any,
            '(' => {
                if self.peek() == Some('?') {
                    self.at += 1;
                    if self.next() != Some(':') {
                        return Err(format!("look-around or flags at {at}"));
                    }
                }
                let alts = self.alternatives()?;
                if self.next() != Some(')') {
                    return Err(format!("`(` at {at} is not closed"));
                }
                Node::Group(alts)
            }
            '[' => self.class()?,
            '\\' => self.escape(false)?,
            c @ ('*' | '+' | '?' | '{') => return Err(format!("`{c}` at {at} repeats nothing")),
            c => Node::Literal(c),
        })
    }

    /// After a `\`: a class or a literal character.
    fn escape(&mut self, in_class: bool) -> Result<Node, String> {
        let class = |ranges: &[(char, char)], negated| Node::Class {
            ranges: ranges.to_vec(),
            negated,
        };
        Ok(match self.next() {
            Some('d') => class(DIGITS, false),
            Some('D') => class(DIGITS, true),
            Some('w') => class(WORD, false),
            Some('W') => class(WORD, true),
            Some('s') => class(SPACE, false),
            Some('S') => class(SPACE, true),
            Some('n') => Node::Literal('\n'),
            Some('t') => Node::Literal('\t'),
            Some('r') => Node::Literal('\r'),
            Some(c) if c.is_ascii_alphanumeric() && !(in_class && c == 'b') => {
                return Err(format!("`\\{c}` is not supported"));
            }
            Some(c) => Node::Literal(c),
            None => return Err("a trailing `\\`".into()),
        })
    }

    fn class(&mut self) -> Result<Node, String> {
        let negated = self.peek() == Some('^');
        if negated {
            self.at += 1;
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.next().ok_or("a `[` is not closed")?;
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = match c {
                '\\' => match self.escape(true)? {
                    Node::Literal(c) => c,
                    Node::Class {
                        ranges: more,
                        negated: false,
                    } => {
                        ranges.extend(more);
                        continue;
                    }
                    _ => return Err("a negated class inside a class".into()),
                },
                c => c,
            };
            if self.peek() == Some('-') && self.chars.get(self.at + 1).is_some_and(|&c| c != ']') {
                self.at += 1;
                let hi = match self.next() {
                    Some('\\') => match self.escape(true)? {
                        Node::Literal(c) => c,
                        _ => return Err("a class as a range's end".into()),
                    },
                    Some(c) => c,
                    None => return Err("a `[` is not closed".into()),
                };
                if hi < lo {
                    return Err(format!("the range {lo}-{hi} is empty"));
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Ok(Node::Class { ranges, negated })
    }

    fn quantifier(&mut self) -> Result<(usize, Option<usize>), String> {
        let bounds = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => {
                let close = self.chars[self.at..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or("a `{` is not closed")?;
                let inside: String = self.chars[self.at + 1..self.at + close].iter().collect();
                let number = |s: &str| {
                    s.trim()
                        .parse::<usize>()
                        .map_err(|_| format!("`{{{inside}}}` is not a repetition"))
                };
                let bounds = match inside.split_once(',') {
                    None => (number(&inside)?, Some(number(&inside)?)),
                    Some((lo, "")) => (number(lo)?, None),
                    Some((lo, hi)) => (number(lo)?, Some(number(hi)?)),
                };
                self.at += close;
                bounds
            }
            _ => return Ok((1, Some(1))),
        };
        self.at += 1;
        if self.peek() == Some('?') {
            self.at += 1; // lazy: the same strings match
        }
        Ok(bounds)
    }
}

#[cfg(test)]
#[path = "pattern_tests.rs"]
mod tests;
