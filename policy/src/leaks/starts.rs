//! Which two bytes can begin a secret, to pass over text that holds none
//! without starting the regex engines.
//!
//! Most of what a scanner sees is short ordinary text: a tool's arguments,
//! a line of output. For those, starting a regex search cost more than the
//! search itself: about 600 instructions per string on a 33-byte echo,
//! twice per call (callgrind, `benches/call_latency.rs`). Every secret the
//! scanner looks for begins with one of a few byte pairs: a shape's literal
//! prefix (`gh`, `AK`, `sk`, `--`…), a known value's first two bytes. And
//! a shape that must start at a word boundary can only start where the
//! byte before is not a word byte. Text in which no such pair stands where
//! it could start a match holds no secret, and is passed over after one
//! cheap walk. Only short text is walked (`PRECHECK_MAX_BYTES`): on long
//! text the engines' own literal prefilter is the faster reader.
//!
//! The pairs come from the patterns themselves (`regex_syntax`'s prefix
//! extraction), not from a list kept by hand, so a shape added later is
//! covered. Should a pattern have no finite set of prefixes two bytes
//! long, there is no pre-check at all: every text is searched.

use regex_syntax::hir::literal::{ExtractKind, Extractor};

/// The byte pairs that may begin a match, by where they may stand.
#[derive(Clone)]
pub(super) struct Starts {
    /// Pairs that may begin a match anywhere (known values, a PEM header).
    anywhere: PairSet,
    /// Pairs that may begin a match only after a non-word byte or at the
    /// start (shapes that begin with `\b` and a word byte).
    at_word_start: PairSet,
    /// What each byte is: a word byte, the first of an `anywhere` pair, the
    /// first of an `at_word_start` pair. Most bytes are none of the last
    /// two, and the walk looks at the pair sets only for those that are.
    class: [u8; 256],
}

/// [`Starts::class`] bits.
const WORD: u8 = 1;
const BEGINS_ANYWHERE: u8 = 2;
const BEGINS_AT_WORD_START: u8 = 4;

/// A set of byte pairs: one bit for each of the 65,536.
#[derive(Clone)]
struct PairSet(Box<[u64; 1024]>);

impl PairSet {
    fn new() -> Self {
        PairSet(Box::new([0; 1024]))
    }

    fn insert(&mut self, first: u8, second: u8) {
        let pair = usize::from(first) << 8 | usize::from(second);
        self.0[pair >> 6] |= 1 << (pair & 63);
    }

    fn contains(&self, first: u8, second: u8) -> bool {
        let pair = usize::from(first) << 8 | usize::from(second);
        self.0[pair >> 6] >> (pair & 63) & 1 == 1
    }

    /// Every pair beginning with `prefix` (one or two bytes).
    fn insert_prefix(&mut self, prefix: &[u8]) {
        match *prefix {
            [first] => (0..=255).for_each(|second| self.insert(first, second)),
            [first, second, ..] => self.insert(first, second),
            [] => unreachable!("empty prefixes are refused before"),
        }
    }
}

impl Starts {
    /// Notes that a match may begin with `prefix` (at least one byte),
    /// anywhere or only at a word start.
    fn add(&mut self, prefix: &[u8], anywhere: bool) {
        let (pairs, bit) = match anywhere {
            true => (&mut self.anywhere, BEGINS_ANYWHERE),
            false => (&mut self.at_word_start, BEGINS_AT_WORD_START),
        };
        pairs.insert_prefix(prefix);
        self.class[usize::from(prefix[0])] |= bit;
    }
}

/// An ASCII word byte, as `(?-u:\b)` sees it.
fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

impl Starts {
    /// The starts of `shapes` (each a pattern; `true` when it must begin
    /// at a word boundary) and of the `known` values. `None` when some
    /// shape's matches may begin with anything: then every text is searched.
    pub(super) fn new<'a>(shapes: &[(&str, bool)], known: impl Iterator<Item = &'a str>) -> Option<Starts> {
        let mut class = [0; 256];
        for byte in 0..=255u8 {
            if is_word(byte) {
                class[usize::from(byte)] = WORD;
            }
        }
        let mut starts = Starts { anywhere: PairSet::new(), at_word_start: PairSet::new(), class };
        for &(pattern, word_boundary) in shapes {
            let hir = regex_syntax::parse(pattern).ok()?;
            let prefixes = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
            for prefix in prefixes.literals()? {
                let bytes = prefix.as_bytes();
                let first = *bytes.first()?;
                // `\b` before a word byte means "after a non-word byte".
                // Before anything else it means the opposite; such a shape
                // is treated as starting anywhere, which is never wrong.
                starts.add(bytes, !(word_boundary && is_word(first)));
            }
        }
        // Known values are at least eight characters: never empty.
        for value in known.filter(|value| !value.is_empty()) {
            starts.add(value.as_bytes(), true);
        }
        Some(starts)
    }

    /// Whether a match could begin somewhere in `text`. `false` is a
    /// promise: none can.
    pub(super) fn may_begin_in(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let begins = |byte: &u8| self.class[usize::from(*byte)] & (BEGINS_ANYWHERE | BEGINS_AT_WORD_START) != 0;
        let mut from = 0;
        // Only the bytes that begin some pair are looked at closely.
        while let Some(found) = bytes[from..].iter().position(begins) {
            let at = from + found;
            let Some(&second) = bytes.get(at + 1) else { return false };
            let first = bytes[at];
            let at_word_start = at == 0 || self.class[usize::from(bytes[at - 1])] & WORD == 0;
            if self.anywhere.contains(first, second) || (at_word_start && self.at_word_start.contains(first, second)) {
                return true;
            }
            from = at + 1;
        }
        false
    }
}

#[cfg(test)]
mod tests;
