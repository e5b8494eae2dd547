//! Reading tensors out of a `model.safetensors` file: an 8-byte little-endian header length,
//! a JSON header naming each tensor's dtype, shape and byte range, then the data. Every
//! length and offset comes from the file and is checked before it is used; tensors are read
//! as `f32` (from F32, F16 or BF16).

use std::collections::HashMap;

use serde::Deserialize;

use crate::EmbedError;

#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: (usize, usize),
}

/// The tensors of a safetensors file, read on demand from its bytes.
pub struct Tensors<'a> {
    entries: HashMap<String, Entry>,
    data: &'a [u8],
}

fn bad(m: &str) -> EmbedError {
    EmbedError::Model(format!("model.safetensors: {m}"))
}

impl<'a> Tensors<'a> {
    /// The header of `bytes`, checked; the data stays where it is.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, EmbedError> {
        let header_len = bytes
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| bad("too short"))?;
        let header_end = usize::try_from(header_len)
            .ok()
            .and_then(|n| n.checked_add(8))
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| bad("truncated header"))?;
        let mut raw: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&bytes[8..header_end]).map_err(|e| bad(&e.to_string()))?;
        raw.remove("__metadata__");
        let entries = raw
            .into_iter()
            .map(|(name, v)| {
                serde_json::from_value(v)
                    .map(|e| (name, e))
                    .map_err(|e| bad(&e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            entries,
            data: &bytes[header_end..],
        })
    }

    /// Whether the file holds a tensor of this name.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// A tensor's shape and values, in row-major order, as `f32`.
    pub fn read(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>), EmbedError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| bad(&format!("no `{name}` tensor")))?;
        let width = match entry.dtype.as_str() {
            "F32" => 4,
            "F16" | "BF16" => 2,
            other => return Err(bad(&format!("{name}: dtype {other} is not supported"))),
        };
        let (start, end) = entry.data_offsets;
        let data = self
            .data
            .get(start..end)
            .ok_or_else(|| bad(&format!("{name}: data offsets outside the file")))?;
        let count = entry
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d));
        if count.and_then(|n| n.checked_mul(width)) != Some(data.len()) {
            return Err(bad(&format!("{name}: data size does not match the shape")));
        }
        let values = match entry.dtype.as_str() {
            "F32" => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            "F16" => data
                .chunks_exact(2)
                .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            _ => data
                .chunks_exact(2)
                .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
                .collect(),
        };
        Ok((entry.shape.clone(), values))
    }
}

/// IEEE 754 half to single precision.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // Subnormal: normalise.
            let mut e: i32 = -1;
            let mut f = f;
            while f & 0x400 == 0 {
                f <<= 1;
                e -= 1;
            }
            let f = f & 0x3ff;
            sign | (((127 - 14 + 1 + e) as u32) << 23) | (f << 13)
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 127 - 15) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file with this header (and `data` after it).
    fn file(header: &str, declared_len: u64, data: &[u8]) -> Vec<u8> {
        let mut out = declared_len.to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn read(bytes: &[u8]) -> Result<(Vec<usize>, Vec<f32>), EmbedError> {
        Tensors::parse(bytes)?.read("embeddings")
    }

    #[test]
    fn lengths_from_the_file_are_checked_before_use() {
        let header = r#"{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
        let good = file(header, header.len() as u64, &[0; 16]);
        assert_eq!(read(&good).expect("reads").0, [2, 2]);
        for (what, bytes) in [
            ("huge header length", file(header, u64::MAX, &[0; 16])),
            ("header past the end", file(header, 1 << 40, &[0; 16])),
            ("short data", file(header, header.len() as u64, &[0; 8])),
            (
                "offsets past the end",
                file(
                    r#"{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[18446744073709551600,18446744073709551615]}}"#,
                    103,
                    &[0; 16],
                ),
            ),
            (
                "a shape that overflows",
                file(
                    r#"{"embeddings":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}"#,
                    84,
                    &[0; 16],
                ),
            ),
            ("too short", vec![1, 2, 3]),
        ] {
            assert!(read(&bytes).is_err(), "{what}");
        }
    }

    #[test]
    fn each_dtype_reads_as_single_precision() {
        let header = r#"{"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]},"c":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}}"#;
        let mut data = Vec::new();
        data.extend(0x3c00u16.to_le_bytes()); // 1.0
        data.extend(0xc000u16.to_le_bytes()); // -2.0
        data.extend(0x3f80u16.to_le_bytes()); // 1.0
        data.extend(0x4040u16.to_le_bytes()); // 3.0
        data.extend([0u8; 8]);
        let bytes = file(header, header.len() as u64, &data);
        let t = Tensors::parse(&bytes).expect("parses");
        assert_eq!(t.read("a").expect("F16").1, [1.0, -2.0]);
        assert_eq!(t.read("b").expect("BF16").1, [1.0, 3.0]);
        assert!(t.read("c").is_err(), "integers are not weights");
        assert!(t.read("d").is_err(), "absent");
        assert!(t.contains("a") && !t.contains("__metadata__"));
    }

    #[test]
    fn half_precision_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }
}
