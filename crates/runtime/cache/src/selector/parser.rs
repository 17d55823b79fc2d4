//! The selector parser: a tokenizer and a recursive-descent parser for the syntax in
//! the [parent module's docs](super), apimachinery's `labels.Parse`.

use super::*;

/// Tokens of the selector language.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Comma,
    Bang,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Open,
    Close,
    End,
}

impl fmt::Display for Token {
    /// How a token is named in error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(word) => write!(f, "{word:?}"),
            Token::Comma => f.write_str("','"),
            Token::Bang => f.write_str("'!'"),
            Token::Eq => f.write_str("'='"),
            Token::DoubleEq => f.write_str("'=='"),
            Token::NotEq => f.write_str("'!='"),
            Token::Gt => f.write_str("'>'"),
            Token::Lt => f.write_str("'<'"),
            Token::Open => f.write_str("'('"),
            Token::Close => f.write_str("')'"),
            Token::End => f.write_str("the end of the selector"),
        }
    }
}

pub(super) struct Parser<'a> {
    input: &'a str,
    /// (token, byte position) pairs, ending with `End`.
    tokens: Vec<(Token, usize)>,
    pos: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(input: &'a str) -> Self {
        let mut tokens = Vec::new();
        let bytes = input.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            let two = |next: u8| bytes.get(i + 1) == Some(&next);
            let (token, len) = match c {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    i += 1;
                    continue;
                }
                b',' => (Token::Comma, 1),
                b'(' => (Token::Open, 1),
                b')' => (Token::Close, 1),
                b'>' => (Token::Gt, 1),
                b'<' => (Token::Lt, 1),
                b'!' if two(b'=') => (Token::NotEq, 2),
                b'!' => (Token::Bang, 1),
                b'=' if two(b'=') => (Token::DoubleEq, 2),
                b'=' => (Token::Eq, 1),
                _ => {
                    let start = i;
                    while i < bytes.len() && !b" \t\n\r,()<>!=".contains(&bytes[i]) {
                        i += 1;
                    }
                    tokens.push((Token::Ident(input[start..i].to_string()), start));
                    continue;
                }
            };
            tokens.push((token, i));
            i += len;
        }
        tokens.push((Token::End, input.len()));
        Self {
            input,
            tokens,
            pos: 0,
        }
    }

    fn peek(&self) -> &Token {
        &self.tokens[self.pos].0
    }

    fn next(&mut self) -> (Token, usize) {
        let t = self.tokens[self.pos].clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn error(&self, reason: String) -> Error {
        Error::InvalidSelector {
            selector: self.input.to_string(),
            reason,
        }
    }

    pub(super) fn parse(mut self) -> Result<Selector> {
        let mut requirements = Vec::new();
        if *self.peek() == Token::End {
            return Ok(Selector::everything());
        }
        loop {
            requirements.push(self.requirement()?);
            match self.next() {
                (Token::End, _) => break,
                (Token::Comma, at) => {
                    if *self.peek() == Token::End {
                        return Err(self
                            .error(format!("expected a requirement after ',' at position {at}")));
                    }
                }
                (t, at) => {
                    return Err(self.error(format!(
                        "expected ',' or the end, found {t} at position {at}"
                    )));
                }
            }
        }
        requirements.sort();
        Ok(Selector { requirements })
    }

    fn requirement(&mut self) -> Result<Requirement> {
        let negated = *self.peek() == Token::Bang;
        if negated {
            self.next();
        }
        let key = match self.next() {
            (Token::Ident(key), _) => key,
            (t, at) => {
                return Err(self.error(format!("expected a label key, found {t} at position {at}")));
            }
        };
        validate_key(&key).map_err(|r| self.error(r))?;
        if negated {
            return Ok(requirement(key, Operator::DoesNotExist, vec![]));
        }
        let op = match self.peek().clone() {
            Token::Comma | Token::End => return Ok(requirement(key, Operator::Exists, vec![])),
            Token::Eq => Operator::Equals,
            Token::DoubleEq => Operator::DoubleEquals,
            Token::NotEq => Operator::NotEquals,
            Token::Gt => Operator::GreaterThan,
            Token::Lt => Operator::LessThan,
            Token::Ident(word) if word == "in" => Operator::In,
            Token::Ident(word) if word == "notin" => Operator::NotIn,
            t => {
                let at = self.tokens[self.pos].1;
                return Err(self.error(format!("expected an operator (=, ==, !=, in, notin, >, <) after {key:?}, found {t} at position {at}")));
            }
        };
        self.next();
        let values = match op {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.single_value(op)?],
        };
        Ok(requirement(key, op, values))
    }

    fn single_value(&mut self, op: Operator) -> Result<String> {
        let value = match self.peek().clone() {
            Token::Ident(v) => {
                self.next();
                v
            }
            // `a=` (empty value) is valid for equality operators.
            Token::Comma | Token::End
                if matches!(
                    op,
                    Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                ) =>
            {
                String::new()
            }
            t => {
                let at = self.tokens[self.pos].1;
                return Err(self.error(format!("expected a value, found {t} at position {at}")));
            }
        };
        if matches!(op, Operator::GreaterThan | Operator::LessThan) && value.parse::<i64>().is_err()
        {
            return Err(self.error(format!("value {value:?} for '>' or '<' must be an integer")));
        }
        validate_value(&value).map_err(|r| self.error(r))?;
        Ok(value)
    }

    /// `( value, value, ... )`. Like apimachinery's `parseValues`, a missing value
    /// between commas or parentheses is the empty value: `()` is `("")` and `(a,)` is
    /// `(a,"")`, both of which match only a label that is present and empty.
    fn value_set(&mut self) -> Result<Vec<String>> {
        match self.next() {
            (Token::Open, _) => {}
            (t, at) => {
                return Err(self.error(format!(
                    "expected '(' after in/notin, found {t} at position {at}"
                )));
            }
        }
        let mut values = Vec::new();
        loop {
            // One slot: a value, or nothing (the empty value).
            match self.peek().clone() {
                Token::Ident(v) => {
                    self.next();
                    validate_value(&v).map_err(|r| self.error(r))?;
                    values.push(v);
                }
                Token::Comma | Token::Close => values.push(String::new()),
                t => {
                    let at = self.tokens[self.pos].1;
                    return Err(self.error(format!(
                        "expected a value, ',' or ')' in the value list, found {t} at position {at}"
                    )));
                }
            }
            match self.next() {
                (Token::Comma, _) => continue,
                (Token::Close, _) => break,
                (t, at) => {
                    return Err(self.error(format!(
                        "expected ',' or ')' after a value, found {t} at position {at}"
                    )));
                }
            }
        }
        Ok(values)
    }
}
