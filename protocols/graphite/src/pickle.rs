//! A safe decoder for carbon's pickle payloads: `[(path, (timestamp, value)), …]`.
//!
//! Python objects are not emulated: this is a small stack machine over the data opcodes of
//! pickle protocols 0–5 (numbers, strings, lists, tuples, memo). Every opcode that names,
//! builds or calls a global (`GLOBAL`, `STACK_GLOBAL`, `REDUCE`, `BUILD`, `INST`, `OBJ`,
//! `NEWOBJ*`, `EXT*`, persistent ids, buffers) rejects the whole frame, so no payload can make
//! the receiver do anything but read numbers and strings. Work is bounded by a node budget
//! (memo `GET`s copy values, which could otherwise blow up a small frame).

use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PickleError {
    #[error("forbidden opcode {name} (0x{op:02x}) at byte {pos}: only data opcodes are accepted")]
    Forbidden {
        op: u8,
        name: &'static str,
        pos: usize,
    },
    #[error("unknown opcode 0x{op:02x} at byte {pos}")]
    Unknown { op: u8, pos: usize },
    #[error("truncated pickle at byte {0}")]
    Truncated(usize),
    #[error("malformed pickle at byte {pos}: {what}")]
    Malformed { pos: usize, what: &'static str },
    #[error("pickle too complex (more than {0} values)")]
    TooComplex(usize),
    #[error("pickle payload is not a list of (path, (timestamp, value))")]
    NotAList,
}

/// A decoded Python value (only the kinds carbon payloads use).
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    None,
    Bool(bool),
    Int(i64),
    /// An integer too large for i64, kept as a float (what `float()` would give).
    BigInt(f64),
    Float(f64),
    Str(Cow<'a, str>),
    Bytes(Cow<'a, [u8]>),
    List(Vec<Value<'a>>),
    Tuple(Vec<Value<'a>>),
    Dict,
}

impl Value<'_> {
    fn nodes(&self) -> usize {
        match self {
            Value::List(v) | Value::Tuple(v) => 1 + v.iter().map(Value::nodes).sum::<usize>(),
            _ => 1,
        }
    }

    /// Python's `float(x)` for the kinds a payload carries.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Bool(b) => Some(*b as u8 as f64),
            Value::Int(i) => Some(*i as f64),
            Value::BigInt(f) | Value::Float(f) => Some(*f),
            Value::Str(s) => crate::pyfloat::parse(s.trim_matches(crate::plaintext::is_py_space)),
            Value::Bytes(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| crate::pyfloat::parse(s.trim_matches(crate::plaintext::is_py_space))),
            _ => None,
        }
    }

    fn as_path(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::Str(s) => Some(Cow::Borrowed(&**s)),
            // Python 2 `str` and protocol-3 `bytes` names: UTF-8, or Latin-1 when not.
            Value::Bytes(b) => Some(match std::str::from_utf8(b) {
                Ok(s) => Cow::Borrowed(s),
                Err(_) => Cow::Owned(b.iter().map(|&c| c as char).collect()),
            }),
            _ => None,
        }
    }
}

/// One item of a payload: path, then carbon's `(timestamp, value)`, both as `float()`.
#[derive(Debug, Clone, PartialEq)]
pub struct Item<'a> {
    pub path: Cow<'a, str>,
    pub timestamp: f64,
    pub value: f64,
}

/// A decoded frame: the well-formed items, and how many were skipped for their shape (carbon
/// logs and skips those, keeping the rest).
#[derive(Debug, Default)]
pub struct Payload<'a> {
    pub items: Vec<Item<'a>>,
    pub bad_items: usize,
}

/// Most values (counting list/tuple nodes and memo copies) one frame may produce.
pub const MAX_NODES: usize = 4 << 20;
/// Longest integer accepted by `LONG`/`LONG1`/`LONG4` in bytes or digits.
const MAX_LONG: usize = 64;

fn forbidden(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x96 => "BYTEARRAY8",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        _ => return None,
    })
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    stack: Vec<Value<'a>>,
    marks: Vec<usize>,
    memo: Vec<Option<Value<'a>>>,
    nodes: usize,
}

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or(PickleError::Truncated(self.pos))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<usize, PickleError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    }

    fn u32(&mut self) -> Result<usize, PickleError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn u64(&mut self) -> Result<usize, PickleError> {
        let b = self.take(8)?;
        usize::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .map_err(|_| PickleError::Truncated(self.pos))
    }

    /// A text argument up to `\n` (protocol 0).
    fn line(&mut self) -> Result<&'a [u8], PickleError> {
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or(PickleError::Truncated(self.pos))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    fn bad(&self, what: &'static str) -> PickleError {
        PickleError::Malformed {
            pos: self.pos,
            what,
        }
    }

    fn push(&mut self, v: Value<'a>) -> Result<(), PickleError> {
        self.nodes += v.nodes();
        if self.nodes > MAX_NODES {
            return Err(PickleError::TooComplex(MAX_NODES));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Value<'a>, PickleError> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err(self.bad("pop across a mark"));
        }
        self.stack.pop().ok_or_else(|| self.bad("stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Value<'a>>, PickleError> {
        let m = self.marks.pop().ok_or_else(|| self.bad("no mark"))?;
        Ok(self.stack.split_off(m))
    }

    fn top(&mut self) -> Result<&mut Value<'a>, PickleError> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err(self.bad("no value above the mark"));
        }
        let pos = self.pos;
        self.stack.last_mut().ok_or(PickleError::Malformed {
            pos,
            what: "stack underflow",
        })
    }

    fn memo_put(&mut self, idx: usize) -> Result<(), PickleError> {
        // Memo indices are small and dense in real pickles; a huge one is an attack.
        if idx > MAX_NODES {
            return Err(self.bad("memo index too large"));
        }
        let v = self.top()?.clone();
        self.nodes += v.nodes();
        if self.nodes > MAX_NODES {
            return Err(PickleError::TooComplex(MAX_NODES));
        }
        if self.memo.len() <= idx {
            self.memo.resize(idx + 1, None);
        }
        self.memo[idx] = Some(v);
        Ok(())
    }

    fn memo_get(&mut self, idx: usize) -> Result<(), PickleError> {
        let v = self
            .memo
            .get(idx)
            .and_then(|v| v.clone())
            .ok_or_else(|| self.bad("memo index not set"))?;
        self.push(v)
    }

    fn append(&mut self, items: Vec<Value<'a>>) -> Result<(), PickleError> {
        match self.top()? {
            Value::List(l) => {
                l.extend(items);
                Ok(())
            }
            _ => Err(self.bad("append to a non-list")),
        }
    }

    fn text(&self, b: &'a [u8]) -> Result<&'a str, PickleError> {
        std::str::from_utf8(b).map_err(|_| self.bad("invalid UTF-8"))
    }

    fn run(mut self) -> Result<Value<'a>, PickleError> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            if let Some(name) = forbidden(op) {
                return Err(PickleError::Forbidden { op, name, pos: at });
            }
            match op {
                0x80 => {
                    let p = self.u8()?;
                    if p > 5 {
                        return Err(self.bad("unsupported protocol"));
                    }
                }
                0x95 => {
                    self.u64()?;
                }
                b'.' => {
                    let v = self.pop()?;
                    return Ok(v);
                }
                b'(' => self.marks.push(self.stack.len()),
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?.clone();
                    self.push(v)?;
                }
                b'p' => {
                    let l = self.line()?;
                    let idx = self
                        .text(l)?
                        .trim()
                        .parse()
                        .map_err(|_| self.bad("PUT index"))?;
                    self.memo_put(idx)?;
                }
                b'g' => {
                    let l = self.line()?;
                    let idx = self
                        .text(l)?
                        .trim()
                        .parse()
                        .map_err(|_| self.bad("GET index"))?;
                    self.memo_get(idx)?;
                }
                b'q' => {
                    let i = self.u8()? as usize;
                    self.memo_put(i)?;
                }
                b'h' => {
                    let i = self.u8()? as usize;
                    self.memo_get(i)?;
                }
                b'r' => {
                    let i = self.u32()?;
                    self.memo_put(i)?;
                }
                b'j' => {
                    let i = self.u32()?;
                    self.memo_get(i)?;
                }
                0x94 => {
                    let i = self.memo.len();
                    self.memo_put(i)?;
                }
                b'I' => {
                    let l = self.line()?;
                    let t = self.text(l)?;
                    let v = match t {
                        "00" => Value::Bool(false),
                        "01" => Value::Bool(true),
                        _ => parse_int_text(t).ok_or_else(|| self.bad("INT"))?,
                    };
                    self.push(v)?;
                }
                b'J' => {
                    let b = self.take(4)?;
                    self.push(Value::Int(
                        i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64
                    ))?;
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Value::Int(v as i64))?;
                }
                b'M' => {
                    let v = self.u16()?;
                    self.push(Value::Int(v as i64))?;
                }
                b'L' => {
                    let l = self.line()?;
                    let t = self.text(l)?;
                    let t = t.strip_suffix('L').unwrap_or(t);
                    if t.len() > MAX_LONG {
                        return Err(self.bad("LONG too long"));
                    }
                    let v = parse_int_text(t).ok_or_else(|| self.bad("LONG"))?;
                    self.push(v)?;
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        self.u8()? as usize
                    } else {
                        self.u32()?
                    };
                    if n > MAX_LONG {
                        return Err(self.bad("LONG1/LONG4 too long"));
                    }
                    let b = self.take(n)?;
                    self.push(long_le(b))?;
                }
                b'F' => {
                    let l = self.line()?;
                    let t = self.text(l)?;
                    let v = crate::pyfloat::parse(t.trim()).ok_or_else(|| self.bad("FLOAT"))?;
                    self.push(Value::Float(v))?;
                }
                b'G' => {
                    let b = self.take(8)?;
                    self.push(Value::Float(f64::from_be_bytes(
                        b.try_into().expect("8 bytes"),
                    )))?;
                }
                b'N' => self.push(Value::None)?,
                0x88 => self.push(Value::Bool(true))?,
                0x89 => self.push(Value::Bool(false))?,
                b'S' => {
                    let l = self.line()?;
                    let v = unquote_repr(l).ok_or_else(|| self.bad("STRING"))?;
                    self.push(Value::Bytes(v))?;
                }
                b'T' => {
                    let n = self.u32()?;
                    let b = self.take(n)?;
                    self.push(Value::Bytes(Cow::Borrowed(b)))?;
                }
                b'U' => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?;
                    self.push(Value::Bytes(Cow::Borrowed(b)))?;
                }
                b'B' | b'C' | 0x8e => {
                    let n = match op {
                        b'B' => self.u32()?,
                        b'C' => self.u8()? as usize,
                        _ => self.u64()?,
                    };
                    let b = self.take(n)?;
                    self.push(Value::Bytes(Cow::Borrowed(b)))?;
                }
                b'V' => {
                    let l = self.line()?;
                    let v = raw_unicode_escape(l).ok_or_else(|| self.bad("UNICODE"))?;
                    self.push(Value::Str(v))?;
                }
                b'X' | 0x8c | 0x8d => {
                    let n = match op {
                        b'X' => self.u32()?,
                        0x8c => self.u8()? as usize,
                        _ => self.u64()?,
                    };
                    let b = self.take(n)?;
                    let s = self.text(b)?;
                    self.push(Value::Str(Cow::Borrowed(s)))?;
                }
                b']' => self.push(Value::List(Vec::new()))?,
                b')' => self.push(Value::Tuple(Vec::new()))?,
                b'}' => self.push(Value::Dict)?,
                b'l' => {
                    let items = self.pop_mark()?;
                    self.stack.push(Value::List(items));
                    self.nodes += 1;
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.stack.push(Value::Tuple(items));
                    self.nodes += 1;
                }
                b'd' => {
                    self.pop_mark()?;
                    self.push(Value::Dict)?;
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if self.stack.len() < floor + n {
                        return Err(self.bad("tuple underflow"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.stack.push(Value::Tuple(items));
                    self.nodes += 1;
                }
                b'a' => {
                    let v = self.pop()?;
                    self.append(vec![v])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    self.append(items)?;
                }
                b's' => {
                    self.pop()?;
                    self.pop()?;
                    match self.top()? {
                        Value::Dict => {}
                        _ => return Err(self.bad("SETITEM on a non-dict")),
                    }
                }
                b'u' => {
                    self.pop_mark()?;
                    match self.top()? {
                        Value::Dict => {}
                        _ => return Err(self.bad("SETITEMS on a non-dict")),
                    }
                }
                _ => return Err(PickleError::Unknown { op, pos: at }),
            }
        }
    }
}

fn parse_int_text(t: &str) -> Option<Value<'static>> {
    let t = t.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::Int(i));
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        return t.parse::<f64>().ok().map(Value::BigInt);
    }
    None
}

/// Little-endian two's-complement integer (`LONG1`/`LONG4`).
fn long_le(b: &[u8]) -> Value<'static> {
    if b.is_empty() {
        return Value::Int(0);
    }
    let neg = b[b.len() - 1] & 0x80 != 0;
    if b.len() <= 8 {
        let mut buf = if neg { [0xffu8; 8] } else { [0u8; 8] };
        buf[..b.len()].copy_from_slice(b);
        return Value::Int(i64::from_le_bytes(buf));
    }
    let mut f = 0.0f64;
    for &byte in b.iter().rev() {
        f = f * 256.0 + byte as f64;
    }
    if neg {
        f -= 2f64.powi(8 * b.len() as i32);
    }
    Value::BigInt(f)
}

/// Protocol 0 `STRING`: a Python 2 `repr()` of a byte string, `'…'` or `"…"` with escapes.
fn unquote_repr(l: &[u8]) -> Option<Cow<'_, [u8]>> {
    let q = *l.first()?;
    if !(q == b'\'' || q == b'"') || l.len() < 2 || *l.last()? != q {
        return None;
    }
    let inner = &l[1..l.len() - 1];
    if !inner.contains(&b'\\') {
        return Some(Cow::Borrowed(inner));
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *inner.get(i + 1)?;
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut k = 0;
                while k < 2 && i < inner.len() && (b'0'..=b'7').contains(&inner[i]) {
                    v = v * 8 + (inner[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                out.push(v as u8);
            }
            b'x' => {
                let h = std::str::from_utf8(inner.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            other => out.push(other),
        }
    }
    Some(Cow::Owned(out))
}

/// Protocol 0 `UNICODE`: raw-unicode-escape (Latin-1 bytes, `\uXXXX` and `\UXXXXXXXX`).
fn raw_unicode_escape(l: &[u8]) -> Option<Cow<'_, str>> {
    if l.is_ascii() && !l.contains(&b'\\') {
        return std::str::from_utf8(l).ok().map(Cow::Borrowed);
    }
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'\\' && matches!(l.get(i + 1), Some(b'u') | Some(b'U')) {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            let h = std::str::from_utf8(l.get(i + 2..i + 2 + n)?).ok()?;
            out.push(char::from_u32(u32::from_str_radix(h, 16).ok()?)?);
            i += 2 + n;
        } else {
            out.push(l[i] as char);
            i += 1;
        }
    }
    Some(Cow::Owned(out))
}

/// Decodes one frame's pickle into carbon items. A forbidden or malformed pickle is an error
/// for the whole frame; an item of the wrong shape is only counted.
pub fn decode(data: &[u8]) -> Result<Payload<'_>, PickleError> {
    let m = Machine {
        data,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        nodes: 0,
    };
    let top = m.run()?;
    let list = match top {
        Value::List(v) | Value::Tuple(v) => v,
        // A dict iterates over its keys, none of which unpacks: carbon skips everything.
        Value::Dict => {
            return Ok(Payload {
                items: Vec::new(),
                bad_items: 1,
            })
        }
        _ => return Err(PickleError::NotAList),
    };
    let mut out = Payload {
        items: Vec::with_capacity(list.len()),
        bad_items: 0,
    };
    for v in list {
        match item(v) {
            Some(i) => out.items.push(i),
            None => out.bad_items += 1,
        }
    }
    Ok(out)
}

fn item(v: Value<'_>) -> Option<Item<'_>> {
    let (Value::List(pair) | Value::Tuple(pair)) = v else {
        return None;
    };
    let [path, point]: [Value; 2] = pair.try_into().ok()?;
    let (Value::List(tv) | Value::Tuple(tv)) = point else {
        return None;
    };
    let [t, val]: [Value; 2] = tv.try_into().ok()?;
    let timestamp = t.as_f64()?;
    let value = val.as_f64()?;
    let path = match path {
        Value::Str(s) => s,
        other => Cow::Owned(other.as_path()?.into_owned()),
    };
    Some(Item {
        path,
        timestamp,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol2_as_carbon_relay_sends() {
        // pickle.dumps([("a.b", (1795000000, 1.5)), ("a.b", (1795000001, 2))], protocol=2)
        let p = b"\x80\x02]q\x00(X\x03\x00\x00\x00a.bq\x01J\xc0\x86\xfdjG?\xf8\x00\x00\x00\x00\x00\x00\x86q\x02\x86q\x03h\x01J\xc1\x86\xfdjK\x02\x86q\x04\x86q\x05e.";
        let d = decode(p).unwrap();
        assert_eq!(d.bad_items, 0);
        assert_eq!(
            d.items,
            vec![
                Item {
                    path: "a.b".into(),
                    timestamp: 1795000000.0,
                    value: 1.5
                },
                Item {
                    path: "a.b".into(),
                    timestamp: 1795000001.0,
                    value: 2.0
                }
            ]
        );
    }

    #[test]
    fn protocol0_text_opcodes() {
        // pickle.dumps([('x', (1795000000L, 2.5))], protocol=0) as Python 2 writes it
        let p = b"(lp0\n(S'x'\np1\n(L1795000000L\nF2.5\ntp2\ntp3\na.";
        let d = decode(p).unwrap();
        assert_eq!(
            d.items,
            vec![Item {
                path: "x".into(),
                timestamp: 1795000000.0,
                value: 2.5
            }]
        );
    }

    #[test]
    fn globals_and_reduce_are_rejected() {
        // pickle.dumps of os.system('echo') via __reduce__, protocol 0 and 2
        let p0 = b"cposix\nsystem\np0\n(Vecho\np1\ntp2\nRp3\n.";
        assert!(matches!(
            decode(p0),
            Err(PickleError::Forbidden { name: "GLOBAL", .. })
        ));
        let p2 = b"\x80\x02]q\x00(X\x01\x00\x00\x00a\x93R.";
        assert!(matches!(
            decode(p2),
            Err(PickleError::Forbidden {
                name: "STACK_GLOBAL",
                ..
            })
        ));
        for op in [
            b'R', b'b', b'i', b'o', 0x81, 0x92, 0x82, 0x83, 0x84, b'P', b'Q',
        ] {
            assert!(
                matches!(
                    decode(&[0x80, 2, b']', op]),
                    Err(PickleError::Forbidden { .. })
                ),
                "{op:x}"
            );
        }
    }

    #[test]
    fn wrong_shapes_are_counted_not_fatal() {
        // [("ok", (1, 2)), ("short", (1,)), 5, ["list", ["3", "4.5"]]]
        let p = b"\x80\x02](X\x02\x00\x00\x00okK\x01K\x02\x86\x86X\x05\x00\x00\x00shortK\x01\x85\x86K\x05]q\x00(X\x04\x00\x00\x00list](X\x01\x00\x00\x003X\x03\x00\x00\x004.5eee.";
        let d = decode(p).unwrap();
        assert_eq!(d.bad_items, 2);
        assert_eq!(d.items.len(), 2);
        assert_eq!(
            d.items[1],
            Item {
                path: "list".into(),
                timestamp: 3.0,
                value: 4.5
            }
        );
        assert!(decode(b"\x80\x02]").is_err());
        assert!(decode(b"K\x01.").is_err());
    }

    #[test]
    fn memo_bombs_are_bounded() {
        // A list memoised and fetched again and again into itself-sized lists.
        let mut p = vec![0x80, 2, b']', b'q', 0];
        for _ in 0..20 {
            p.extend_from_slice(b"(h\x00h\x00h\x00h\x00lq\x00");
        }
        p.push(b'.');
        assert!(matches!(decode(&p), Err(PickleError::TooComplex(_))));
    }

    #[test]
    fn longs() {
        assert_eq!(long_le(&[0xff]), Value::Int(-1));
        assert_eq!(long_le(&[0x00, 0x01]), Value::Int(256));
        assert_eq!(long_le(&[0x40, 0xba, 0xfd, 0x6a]), Value::Int(0x6afdba40));
    }
}
