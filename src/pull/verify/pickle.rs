//! Walks a pickle the way Python's Unpickler does, without building or running anything.
//!
//! Proves: every opcode is one Python knows, every argument is present, the value stack never
//! underflows (marks included), every memo fetch finds its key, STOP comes with a value on the
//! stack and is the last byte. Values are kept only as far as needed to hand back the persistent
//! ids (how torch points at its storages); everything else is `Opaque`. Cannot prove: that the
//! classes and functions the pickle names can be imported and accept their arguments.
//! Hand-written: the maintained Rust pickle reader (`serde-pickle`) builds values and refuses
//! the globals, reduce calls and persistent ids every torch checkpoint is made of; walking the
//! opcodes without evaluating them is what a check needs, and nothing maintained does that.

use super::{Problem, corrupt, read_exact_or};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

/// Strings longer than this are skipped rather than kept: persistent ids hold short names.
const KEEP: u64 = 4096;
/// Protocol 0 text arguments (numbers, names) are short; a longer line is damage.
const MAX_LINE: usize = 1 << 16;

#[derive(Debug, PartialEq)]
pub(super) enum Value {
    Str(String),
    Int(i64),
    /// A `module.name` reference, e.g. `torch.FloatStorage`.
    Global(String),
    Tuple(Vec<Rc<Value>>),
    Opaque,
}

pub(super) struct PersistentId {
    /// Byte offset of the BINPERSID/PERSID opcode, for error messages.
    pub(super) at: u64,
    pub(super) id: Rc<Value>,
}

pub(super) struct Pickle {
    /// From a leading PROTO opcode; protocol 0 and 1 pickles have none.
    pub(super) protocol: Option<u8>,
    pub(super) persistent_ids: Vec<PersistentId>,
}

pub(super) fn walk(input: &mut dyn Read) -> Result<Pickle, Problem> {
    let mut w = Walker {
        r: BufReader::new(input),
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        pids: Vec::new(),
    };
    let mut protocol = None;
    loop {
        let at = w.pos;
        let op = w.array::<1>()?[0];
        if op == b'.' {
            if w.stack.pop().is_none() {
                return Err(corrupt(format!("byte {at}: STOP with an empty stack")));
            }
            if !w.r.fill_buf()?.is_empty() {
                return Err(corrupt(format!("byte {at}: STOP is not the last byte")));
            }
            return Ok(Pickle {
                protocol,
                persistent_ids: w.pids,
            });
        }
        if op == 0x80 {
            let p = w.array::<1>()?[0];
            if p > 5 {
                return Err(corrupt(format!("byte {at}: unknown pickle protocol {p}")));
            }
            if at == 0 {
                protocol = Some(p);
            }
            continue;
        }
        w.step(op, at)
            .map_err(|p| p.context(&format!("byte {at} (opcode 0x{op:02x})")))?;
    }
}

struct Walker<'a> {
    r: BufReader<&'a mut dyn Read>,
    pos: u64,
    stack: Vec<Rc<Value>>,
    /// Python's metastack: MARK sets the current stack aside and starts an empty one.
    marks: Vec<Vec<Rc<Value>>>,
    memo: HashMap<u64, Rc<Value>>,
    pids: Vec<PersistentId>,
}

impl Walker<'_> {
    /// One opcode, as Python's `pickle.Unpickler` runs it. One match over the whole opcode
    /// table, in the order `pickletools` lists it, so each arm can be read against the
    /// reference side by side; split across functions it would hide which opcodes exist. That
    /// is why it runs past 80 lines.
    fn step(&mut self, op: u8, at: u64) -> Result<(), Problem> {
        let opaque = || Rc::new(Value::Opaque);
        match op {
            b'(' => self.marks.push(std::mem::take(&mut self.stack)),
            // Python pops a mark when the stack is empty.
            b'0' if self.stack.is_empty() => drop(self.pop_mark()?),
            b'0' => drop(self.pop()?),
            b'1' => drop(self.pop_mark()?),
            b'2' => {
                let top = self.top()?;
                self.stack.push(top);
            }
            b'I' | b'L' => {
                let line = self.line()?;
                let digits = line.strip_suffix('L').unwrap_or(&line);
                self.push(digits.parse().map_or(Value::Opaque, Value::Int));
            }
            b'F' | b'S' | b'V' => {
                self.line()?;
                self.stack.push(opaque());
            }
            b'J' => {
                let n = i32::from_le_bytes(self.array()?);
                self.push(Value::Int(n.into()));
            }
            b'K' => {
                let n = self.array::<1>()?[0];
                self.push(Value::Int(n.into()));
            }
            b'M' => {
                let n = u16::from_le_bytes(self.array()?);
                self.push(Value::Int(n.into()));
            }
            0x8a => {
                let len = self.array::<1>()?[0];
                let bytes = self.bytes(u64::from(len))?;
                self.push(bytes.map_or(Value::Opaque, |b| long1(&b)));
            }
            b'G' => {
                self.array::<8>()?;
                self.stack.push(opaque());
            }
            b'N' | b')' | b']' | b'}' | 0x88 | 0x89 | 0x8f | 0x97 => self.stack.push(opaque()),
            // Python 2 `str` (BINSTRING) and `unicode` are both names to torch's loader.
            b'X' | b'T' => self.string(4)?,
            b'U' | 0x8c => self.string(1)?,
            0x8d => self.string(8)?,
            b'B' => self.blob(4)?,
            b'C' => self.blob(1)?,
            0x8e | 0x96 => self.blob(8)?,
            b'c' => {
                let name = format!("{}.{}", self.line()?, self.line()?);
                self.push(Value::Global(name));
            }
            0x93 => {
                let (name, module) = (self.pop()?, self.pop()?);
                match (&*module, &*name) {
                    (Value::Str(m), Value::Str(n)) => self.push(Value::Global(format!("{m}.{n}"))),
                    _ => return Err(corrupt("STACK_GLOBAL needs two strings")),
                }
            }
            b'P' => {
                let id = Rc::new(Value::Str(self.line()?));
                self.pids.push(PersistentId { at, id });
                self.stack.push(opaque());
            }
            b'Q' => {
                let id = self.pop()?;
                self.pids.push(PersistentId { at, id });
                self.stack.push(opaque());
            }
            b'R' | 0x81 => {
                self.pop()?;
                self.pop()?;
                self.stack.push(opaque());
            }
            0x92 => {
                for _ in 0..3 {
                    self.pop()?;
                }
                self.stack.push(opaque());
            }
            b'b' | b'a' => {
                self.pop()?;
                self.top()?;
            }
            b's' => {
                self.pop()?;
                self.pop()?;
                self.top()?;
            }
            b'e' | 0x90 => {
                self.pop_mark()?;
                self.top()?;
            }
            b'u' => {
                self.pairs()?;
                self.top()?;
            }
            b't' => {
                let items = self.pop_mark()?;
                self.push(Value::Tuple(items));
            }
            b'd' => {
                self.pairs()?;
                self.stack.push(opaque());
            }
            b'l' | 0x91 => {
                self.pop_mark()?;
                self.stack.push(opaque());
            }
            b'o' => {
                if self.pop_mark()?.is_empty() {
                    return Err(corrupt("OBJ without a class"));
                }
                self.stack.push(opaque());
            }
            b'i' => {
                self.line()?;
                self.line()?;
                self.pop_mark()?;
                self.stack.push(opaque());
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let len = self.stack.len();
                if len < n {
                    return Err(corrupt("stack underflow"));
                }
                let items = self.stack.split_off(len - n);
                self.push(Value::Tuple(items));
            }
            b'g' => {
                let key = self.line()?.parse().map_err(|_| corrupt("bad GET key"))?;
                self.get(key)?;
            }
            b'h' => {
                let key = self.array::<1>()?[0];
                self.get(key.into())?;
            }
            b'j' => {
                let key = u32::from_le_bytes(self.array()?);
                self.get(key.into())?;
            }
            b'p' => {
                let key = self.line()?.parse().map_err(|_| corrupt("bad PUT key"))?;
                self.put(key)?;
            }
            b'q' => {
                let key = self.array::<1>()?[0];
                self.put(key.into())?;
            }
            b'r' => {
                let key = u32::from_le_bytes(self.array()?);
                self.put(key.into())?;
            }
            0x94 => self.put(self.memo.len() as u64)?,
            0x82 => self.extension::<1>()?,
            0x83 => self.extension::<2>()?,
            0x84 => self.extension::<4>()?,
            0x95 => drop(self.array::<8>()?),
            0x98 => drop(self.top()?),
            _ => return Err(corrupt("unknown opcode")),
        }
        Ok(())
    }

    fn push(&mut self, v: Value) {
        self.stack.push(Rc::new(v));
    }

    fn pop(&mut self) -> Result<Rc<Value>, Problem> {
        self.stack.pop().ok_or_else(|| corrupt("stack underflow"))
    }

    fn top(&self) -> Result<Rc<Value>, Problem> {
        self.stack
            .last()
            .cloned()
            .ok_or_else(|| corrupt("stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Rc<Value>>, Problem> {
        let outer = self
            .marks
            .pop()
            .ok_or_else(|| corrupt("no MARK to pop to"))?;
        Ok(std::mem::replace(&mut self.stack, outer))
    }

    /// DICT and SETITEMS take keys and values alternately; an odd count fails in Python.
    fn pairs(&mut self) -> Result<(), Problem> {
        if self.pop_mark()?.len() % 2 != 0 {
            return Err(corrupt("odd number of items for a dict"));
        }
        Ok(())
    }

    fn get(&mut self, key: u64) -> Result<(), Problem> {
        let v = self.memo.get(&key).cloned();
        self.stack
            .push(v.ok_or_else(|| corrupt(format!("memo key {key} was never stored")))?);
        Ok(())
    }

    fn put(&mut self, key: u64) -> Result<(), Problem> {
        let top = self.top()?;
        self.memo.insert(key, top);
        Ok(())
    }

    fn extension<const N: usize>(&mut self) -> Result<(), Problem> {
        self.array::<N>()?;
        self.stack.push(Rc::new(Value::Opaque));
        Ok(())
    }

    fn string(&mut self, width: usize) -> Result<(), Problem> {
        let len = self.length(width)?;
        let kept = self.bytes(len)?.and_then(|b| String::from_utf8(b).ok());
        self.push(kept.map_or(Value::Opaque, Value::Str));
        Ok(())
    }

    fn blob(&mut self, width: usize) -> Result<(), Problem> {
        let len = self.length(width)?;
        self.bytes(len)?;
        self.push(Value::Opaque);
        Ok(())
    }

    fn length(&mut self, width: usize) -> Result<u64, Problem> {
        let mut le = [0u8; 8];
        read_exact_or(&mut self.r, &mut le[..width], "a pickle length")?;
        self.pos += width as u64;
        Ok(u64::from_le_bytes(le))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Problem> {
        let mut a = [0u8; N];
        read_exact_or(&mut self.r, &mut a, "the pickle (no STOP)")?;
        self.pos += N as u64;
        Ok(a)
    }

    /// The next `len` bytes, kept only when short enough to be a name.
    fn bytes(&mut self, len: u64) -> Result<Option<Vec<u8>>, Problem> {
        if len <= KEEP {
            let mut b = vec![0; len as usize];
            read_exact_or(&mut self.r, &mut b, "a pickle string")?;
            self.pos += len;
            return Ok(Some(b));
        }
        let skipped = io::copy(&mut (&mut self.r).take(len), &mut io::sink())?;
        self.pos += skipped;
        if skipped < len {
            return Err(corrupt(format!(
                "file ends inside a {len}-byte pickle string"
            )));
        }
        Ok(None)
    }

    fn line(&mut self) -> Result<String, Problem> {
        let mut line = Vec::new();
        let n = read_line_capped(&mut self.r, &mut line)?;
        self.pos += n as u64;
        match line.pop() {
            Some(b'\n') => Ok(String::from_utf8_lossy(&line).into_owned()),
            _ if n > MAX_LINE => Err(corrupt("text argument longer than 64 KiB")),
            _ => Err(corrupt("file ends inside a text argument")),
        }
    }
}

/// Reads up to and including `\n`, but never more than `MAX_LINE + 1` bytes.
fn read_line_capped(r: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<usize> {
    let n = r.take(MAX_LINE as u64 + 1).read_until(b'\n', line)?;
    Ok(n)
}

/// LONG1: little-endian two's complement, as many bytes as given.
fn long1(b: &[u8]) -> Value {
    if b.len() > 8 {
        return Value::Opaque;
    }
    let fill = if b.last().is_some_and(|&x| x & 0x80 != 0) {
        0xFF
    } else {
        0
    };
    let mut le = [fill; 8];
    le[..b.len()].copy_from_slice(b);
    Value::Int(i64::from_le_bytes(le))
}

#[cfg(test)]
#[path = "pickle_tests.rs"]
mod tests;
