//! The BERT tokenizer (normaliser, pre-tokenizer, WordPiece) as `tokenizer.json` describes
//! it, without the `tokenizers` crate.

use std::collections::HashMap;

use serde::Deserialize;
use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};

use crate::EmbedError;

/// A WordPiece tokenizer with BERT's normalisation.
pub struct WordPiece {
    vocab: HashMap<Box<str>, u32, foldhash::fast::FixedState>,
    unk: Option<u32>,
    prefix: String,
    max_chars: usize,
    lowercase: bool,
    strip_accents: bool,
    chinese_chars: bool,
    clean_text: bool,
}

#[derive(Deserialize)]
struct TokenizerJson {
    normalizer: Option<NormalizerJson>,
    model: ModelJson,
}

#[derive(Deserialize)]
struct NormalizerJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    clean_text: Option<bool>,
    #[serde(default)]
    handle_chinese_chars: Option<bool>,
    #[serde(default)]
    strip_accents: Option<bool>,
    #[serde(default)]
    lowercase: Option<bool>,
}

#[derive(Deserialize)]
struct ModelJson {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, u32>,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    max_input_chars_per_word: Option<usize>,
}

impl WordPiece {
    /// Reads a Hugging Face `tokenizer.json` with a `BertNormalizer` and a `WordPiece` model.
    pub fn from_json(json: &[u8]) -> Result<Self, EmbedError> {
        let t: TokenizerJson = serde_json::from_slice(json)
            .map_err(|e| EmbedError::Model(format!("tokenizer.json: {e}")))?;
        if t.model.kind != "WordPiece" {
            return Err(EmbedError::Model(format!(
                "tokenizer model {:?} is not supported (WordPiece is)",
                t.model.kind
            )));
        }
        let (lowercase, strip_accents, chinese_chars, clean_text) = match &t.normalizer {
            Some(n) if n.kind == "BertNormalizer" => {
                let lowercase = n.lowercase.unwrap_or(true);
                (
                    lowercase,
                    // As in BERT: unset means "follow lowercase".
                    n.strip_accents.unwrap_or(lowercase),
                    n.handle_chinese_chars.unwrap_or(true),
                    n.clean_text.unwrap_or(true),
                )
            }
            Some(n) => {
                return Err(EmbedError::Model(format!(
                    "normalizer {:?} is not supported (BertNormalizer is)",
                    n.kind
                )));
            }
            None => (false, false, false, false),
        };
        let unk = t
            .model
            .unk_token
            .as_ref()
            .and_then(|u| t.model.vocab.get(u).copied());
        Ok(Self {
            vocab: t
                .model
                .vocab
                .into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v))
                .collect(),
            unk,
            prefix: t
                .model
                .continuing_subword_prefix
                .unwrap_or_else(|| "##".into()),
            max_chars: t.model.max_input_chars_per_word.unwrap_or(100),
            lowercase,
            strip_accents,
            chinese_chars,
            clean_text,
        })
    }

    /// The number of entries in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The id of a token (for example `[CLS]`), if the vocabulary has it.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    /// The id of the unknown token, if the vocabulary has one.
    pub fn unk_id(&self) -> Option<u32> {
        self.unk
    }

    /// Appends the token ids of `text` to `out` (no special tokens).
    pub fn encode_into(&self, text: &str, out: &mut Vec<u32>) {
        self.for_each_word(text, |_, ids| out.extend_from_slice(ids));
    }

    /// Calls `f` with each word of `text` (normalised: lower case, accents stripped, each
    /// punctuation character a word of its own) and its token ids, in order; the words'
    /// ids together are [`WordPiece::encode`]'s.
    pub fn for_each_word(&self, text: &str, mut f: impl FnMut(&str, &[u32])) {
        let normalized = self.normalize(text);
        let mut piece = String::new();
        let mut ids = Vec::new();
        pre_tokenize(&normalized, |word| {
            ids.clear();
            self.word_pieces(word, &mut piece, &mut ids);
            f(word, &ids);
        });
    }

    /// The token ids of `text`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.encode_into(text, &mut out);
        out
    }

    fn normalize(&self, text: &str) -> String {
        if text.is_ascii() {
            return self.normalize_ascii(text);
        }
        let mut s = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
                    continue;
                }
                if c.is_whitespace() {
                    s.push(' ');
                    continue;
                }
            }
            if self.chinese_chars && is_cjk(c) {
                s.push(' ');
                s.push(c);
                s.push(' ');
            } else {
                s.push(c);
            }
        }
        // ASCII text is its own decomposition, has no accent to strip and lowercases in
        // place: the usual case costs no Unicode tables.
        let ascii = s.is_ascii();
        if self.strip_accents && !ascii {
            s = s.nfd().filter(|c| !is_combining_mark(*c)).collect();
        }
        if self.lowercase {
            if ascii {
                s.make_ascii_lowercase();
            } else {
                s = s.to_lowercase();
            }
        }
        s
    }

    /// [`WordPiece::normalize`] of ASCII text, a byte at a time: no CJK, nothing to
    /// decompose, lower case in place.
    fn normalize_ascii(&self, text: &str) -> String {
        let mut out = Vec::with_capacity(text.len());
        for &b in text.as_bytes() {
            // ASCII controls are 0-31 and 127; of them 9-13 are whitespace (as `char` says).
            if self.clean_text && (b < 32 || b == 127) {
                if (9..=13).contains(&b) {
                    out.push(b' ');
                }
                continue;
            }
            out.push(if self.lowercase {
                b.to_ascii_lowercase()
            } else {
                b
            });
        }
        // ASCII in, ASCII out.
        String::from_utf8(out).unwrap_or_default()
    }

    fn word_pieces(&self, word: &str, piece: &mut String, out: &mut Vec<u32>) {
        let chars = word.chars().count();
        if chars > self.max_chars {
            out.extend(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                let candidate = if start > 0 {
                    piece.clear();
                    piece.push_str(&self.prefix);
                    piece.push_str(&word[start..end]);
                    piece.as_str()
                } else {
                    &word[..end]
                };
                if let Some(&id) = self.vocab.get(candidate) {
                    found = Some(id);
                    break;
                }
                // Step back one character.
                end = word[..end]
                    .char_indices()
                    .next_back()
                    .map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(start_len);
                    out.extend(self.unk);
                    return;
                }
            }
        }
    }
}

/// Splits on whitespace, and makes each punctuation character its own word: calls `f` with
/// each word in order.
fn pre_tokenize<'a>(s: &'a str, f: impl FnMut(&'a str)) {
    if s.is_ascii() {
        pre_tokenize_ascii(s, f);
    } else {
        pre_tokenize_unicode(s, f);
    }
}

/// [`pre_tokenize`] of ASCII text, a byte at a time (every character is one byte).
fn pre_tokenize_ascii<'a>(s: &'a str, mut f: impl FnMut(&'a str)) {
    let mut start = None;
    for (i, b) in s.bytes().enumerate() {
        let c = char::from(b);
        if c.is_whitespace() || is_punctuation(c) {
            if let Some(st) = start.take() {
                f(&s[st..i]);
            }
            if !c.is_whitespace() {
                f(&s[i..=i]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        f(&s[st..]);
    }
}

/// [`pre_tokenize`] of any text.
fn pre_tokenize_unicode<'a>(s: &'a str, mut f: impl FnMut(&'a str)) {
    for chunk in s.split(char::is_whitespace).filter(|w| !w.is_empty()) {
        let mut start = 0;
        for (i, c) in chunk.char_indices() {
            if is_punctuation(c) {
                if start < i {
                    f(&chunk[start..i]);
                }
                f(&chunk[i..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        if start < chunk.len() {
            f(&chunk[start..]);
        }
    }
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(c as u32,
            0x00A1..=0x00BF | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003
            | 0x3008..=0x3011 | 0x3014..=0x301F | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20
            | 0xFF3B..=0xFF40 | 0xFF5B..=0xFF65)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ASCII shortcut gives what the Unicode path gives (decomposition, accents
    /// stripped, lowercased), and accented text still goes the Unicode way.
    #[test]
    fn ascii_text_normalises_as_the_unicode_path_does() {
        let wp = WordPiece::from_json(include_bytes!("../model/tokenizer.json")).expect("loads");
        assert!(wp.lowercase && wp.strip_accents);
        for text in [
            "Hey Mel! Good to see you!",
            "MIXED case, digits 2023-05-08 & symbols ~^`",
            "tabs\tand\nnew lines",
            "a vertical\x0btab, a form\x0cfeed\r\n",
            "",
        ] {
            let unicode: String = text
                .split(char::is_whitespace)
                .collect::<Vec<_>>()
                .join(" ")
                .nfd()
                .filter(|c| !is_combining_mark(*c))
                .collect::<String>()
                .to_lowercase();
            assert_eq!(wp.normalize(text), unicode, "{text:?}");
        }
        assert_eq!(wp.normalize("Café ÉCOLE"), "cafe ecole");
    }

    /// The ASCII pre-tokenizer splits as the Unicode one does.
    #[test]
    fn ascii_text_splits_as_the_unicode_path_does() {
        for text in [
            "hey mel! good to see you!",
            "  leading, trailing.  ",
            "it's 2023-05-08 at 1:56 pm -- (really?)",
            "a\x0bb\x0cc\rd\te\nf",
            "...",
            "",
        ] {
            let (mut ascii, mut unicode) = (Vec::new(), Vec::new());
            pre_tokenize_ascii(text, |w| ascii.push(w));
            pre_tokenize_unicode(text, |w| unicode.push(w));
            assert_eq!(ascii, unicode, "{text:?}");
            assert!(!ascii.is_empty() || text.trim().is_empty());
        }
    }
}
