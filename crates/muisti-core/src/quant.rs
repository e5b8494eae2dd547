//! Integer dot products of a quantised query with quantised vectors: the inner loop of the
//! in-memory copies' exact vector scan and of recall's word matching.
//!
//! The widest instruction set the CPU has is found at run time, through `pulp`'s safe
//! wrappers (no `unsafe` here): with AVX-512 thirty-two values a step are widened to `i16`
//! and multiplied and summed in pairs (`vpmovsxbw`, `vpmaddwd` on 512 bits), with AVX2
//! sixteen; elsewhere a loop the compiler vectorises for the baseline instruction set
//! (`pmaddwd`, eight values a step). All give the exact integer sum.

#[cfg(target_arch = "x86_64")]
use pulp::x86::{V3, V4};

/// A query vector quantised like the stored ones ([`quantize_into`]), ready for
/// [`QueryI8::dots`].
pub struct QueryI8 {
    v: Vec<i8>,
    scale: f32,
    wide: Wide,
    /// As many zeros as the query has values: what a stored vector of another length is
    /// scored as, on every path ([`QueryI8::fit`]).
    zeros: Vec<i8>,
}

/// The query widened to `i16` in whole steps of the widest instruction set the CPU has
/// (the rest of it, and every value on other CPUs, goes through [`dot_i8`]).
enum Wide {
    #[cfg(target_arch = "x86_64")]
    V4(V4, Vec<pulp::i16x32>),
    #[cfg(target_arch = "x86_64")]
    V3(V3, Vec<pulp::i16x16>),
    Baseline,
}

/// The instruction sets [`Wide::of`] may use, narrowest first (tests take each in turn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    #[cfg(test)]
    Baseline,
    V3,
    V4,
}

impl Wide {
    /// `v` widened for the widest instruction set up to `widest` that the CPU has.
    fn of(v: &[i8], widest: Level) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if widest >= Level::V4
                && let Some(simd) = V4::try_new()
            {
                let (steps, _) = v.as_chunks::<32>();
                let wide = steps
                    .iter()
                    .map(|s| simd.convert_i8x32_to_i16x32(pulp::bytemuck::cast(*s)))
                    .collect();
                return Self::V4(simd, wide);
            }
            if widest >= Level::V3
                && let Some(simd) = V3::try_new()
            {
                let (steps, _) = v.as_chunks::<16>();
                let wide = steps
                    .iter()
                    .map(|s| simd.convert_i8x16_to_i16x16(pulp::bytemuck::cast(*s)))
                    .collect();
                return Self::V3(simd, wide);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (v, widest);
        Self::Baseline
    }
}

impl QueryI8 {
    /// The query `q`, quantised (and widened for the CPU's vector instructions).
    pub fn new(q: &[f32]) -> Self {
        let mut v = Vec::with_capacity(q.len());
        let scale = quantize_into(q, &mut v);
        Self::quantised(v, scale)
    }

    /// A query already quantised ([`quantize_into`] gave `v` and `scale`), widened for the
    /// CPU's vector instructions.
    pub fn quantised(v: Vec<i8>, scale: f32) -> Self {
        Self::at_most(v, scale, Level::V4)
    }

    fn at_most(v: Vec<i8>, scale: f32, widest: Level) -> Self {
        let wide = Wide::of(&v, widest);
        let zeros = vec![0; v.len()];
        Self {
            v,
            scale,
            wide,
            zeros,
        }
    }

    /// `v` when it is as long as the query, else zeros: the one length check of every path,
    /// so a stored vector of another length (another model's, a damaged one) scores 0
    /// whatever the CPU, never a panic on one path and a truncated sum on another.
    #[inline(always)]
    fn fit<'a>(&'a self, v: &'a [i8]) -> &'a [i8] {
        if v.len() == self.v.len() {
            v
        } else {
            &self.zeros
        }
    }

    /// The query's scale times a stored vector's: what turns their integer dot product into
    /// the dot product of the vectors they stand for.
    pub fn scale(&self, stored: f32) -> f32 {
        self.scale * stored
    }

    /// Appends to `out` the integer dot product of the query with each of `vectors`; a vector
    /// that is not as long as the query counts as 0.
    pub fn dots<'a>(&self, vectors: impl Iterator<Item = &'a [i8]>, out: &mut Vec<i32>) {
        let vectors = vectors.map(|v| self.fit(v));
        match &self.wide {
            #[cfg(target_arch = "x86_64")]
            Wide::V4(simd, wide) => {
                let simd = *simd;
                simd.vectorize(|| self.push_dots(Avx512 { simd, q: wide }, vectors, out));
            }
            #[cfg(target_arch = "x86_64")]
            Wide::V3(simd, wide) => {
                let simd = *simd;
                simd.vectorize(|| self.push_dots(Avx2 { simd, q: wide }, vectors, out));
            }
            Wide::Baseline => out.extend(vectors.map(|v| dot_i8(&self.v, v))),
        }
    }

    /// Appends the dot product of the query with each of `vectors`: the kernel's of the
    /// query's whole steps with four vectors at a time (their sums reduced together; the last
    /// few padded with the first of them, whose extra products are dropped), plus the rest of
    /// the values' for each. The loop of every widened path, inlined into its `vectorize`
    /// with the kernel's methods, where the instructions are enabled.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn push_dots<'a>(
        &self,
        kernel: impl Kernel,
        vectors: impl Iterator<Item = &'a [i8]>,
        out: &mut Vec<i32>,
    ) {
        let split = kernel.split();
        let mut held: [&[i8]; 4] = [&[]; 4];
        let mut n = 0;
        for v in vectors {
            held[n] = v;
            n += 1;
            if n == 4 {
                for (v, dot) in held.iter().zip(kernel.four(held)) {
                    out.push(dot + self.tail_dot(split, v));
                }
                n = 0;
            }
        }
        if n > 0 {
            let mut padded = held;
            padded[n..].fill(held[0]);
            for (v, dot) in held[..n].iter().zip(kernel.four(padded)) {
                out.push(dot + self.tail_dot(split, v));
            }
        }
    }

    /// The dot product of the query's values from `split` on with `v`'s.
    #[inline(always)]
    fn tail_dot(&self, split: usize, v: &[i8]) -> i32 {
        let tail = &self.v[split..];
        if tail.is_empty() {
            0
        } else {
            dot_i8(tail, &v[split..])
        }
    }
}

/// The dot products of a widened query's whole steps with stored vectors, for
/// [`QueryI8::push_dots`]; every method is inlined into the caller's `vectorize`.
#[cfg(target_arch = "x86_64")]
trait Kernel {
    /// How many of the query's values the whole steps cover.
    fn split(&self) -> usize;
    /// With four vectors.
    fn four(&self, v: [&[i8]; 4]) -> [i32; 4];
}

/// The AVX-512 kernel: steps of thirty-two values.
#[cfg(target_arch = "x86_64")]
struct Avx512<'a> {
    simd: V4,
    q: &'a [pulp::i16x32],
}

#[cfg(target_arch = "x86_64")]
impl Kernel for Avx512<'_> {
    #[inline(always)]
    fn split(&self) -> usize {
        self.q.len() * 32
    }

    #[inline(always)]
    fn four(&self, v: [&[i8]; 4]) -> [i32; 4] {
        dots4_v4(self.simd, self.q, v)
    }
}

/// The AVX2 kernel: steps of sixteen values.
#[cfg(target_arch = "x86_64")]
struct Avx2<'a> {
    simd: V3,
    q: &'a [pulp::i16x16],
}

#[cfg(target_arch = "x86_64")]
impl Kernel for Avx2<'_> {
    #[inline(always)]
    fn split(&self) -> usize {
        self.q.len() * 16
    }

    #[inline(always)]
    fn four(&self, v: [&[i8]; 4]) -> [i32; 4] {
        dots4_v3(self.simd, self.q, v)
    }
}

/// `Σ q[i] × v[i]` over the whole steps of thirty-two of each of four vectors, with
/// AVX-512: the four sums are reduced together (each one's halves added, then horizontal adds
/// of pairs), fewer instructions than reducing each alone. Inlined into the caller's
/// [`V4::vectorize`], where the instructions are enabled.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn dots4_v4(simd: V4, q: &[pulp::i16x32], v: [&[i8]; 4]) -> [i32; 4] {
    use std::arch::x86_64::__m512i;
    // As many steps as the query's (a stored vector is as long): no bounds check per step.
    let steps = v.map(|v| &v.as_chunks::<32>().0[..q.len()]);
    let mut acc: [__m512i; 4] = [pulp::bytemuck::cast([0i32; 16]); 4];
    for (k, q) in q.iter().enumerate() {
        let q: __m512i = pulp::bytemuck::cast(*q);
        for (acc, steps) in acc.iter_mut().zip(&steps) {
            let v: __m512i =
                pulp::bytemuck::cast(simd.convert_i8x32_to_i16x32(pulp::bytemuck::cast(steps[k])));
            *acc = simd
                .avx512f
                ._mm512_add_epi32(*acc, simd.avx512bw._mm512_madd_epi16(q, v));
        }
    }
    let half = |a: __m512i| {
        simd.avx2._mm256_add_epi32(
            simd.avx512f._mm512_castsi512_si256(a),
            simd.avx512f._mm512_extracti64x4_epi64::<1>(a),
        )
    };
    // Each called here, not through `array::map`: a closure called from a function that is
    // not inlined loses the enabled instructions (each intrinsic becomes a call).
    reduce4(
        *simd,
        [half(acc[0]), half(acc[1]), half(acc[2]), half(acc[3])],
    )
}

/// The sums of the eight lanes of each of four vectors: horizontal adds of pairs, twice,
/// give `[a0..3, b0..3, c0..3, d0..3, a4..7, b4..7, c4..7, d4..7]`, whose halves added are
/// the four sums.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn reduce4(simd: V3, acc: [std::arch::x86_64::__m256i; 4]) -> [i32; 4] {
    let ab = simd.avx2._mm256_hadd_epi32(acc[0], acc[1]);
    let cd = simd.avx2._mm256_hadd_epi32(acc[2], acc[3]);
    let all = simd.avx2._mm256_hadd_epi32(ab, cd);
    let sums = simd.sse2._mm_add_epi32(
        simd.avx._mm256_castsi256_si128(all),
        simd.avx2._mm256_extracti128_si256::<1>(all),
    );
    pulp::bytemuck::cast(sums)
}

/// `Σ q[i] × v[i]` over the whole steps of sixteen of each of four vectors, with AVX2, their
/// sums reduced together ([`reduce4`]). Inlined into the caller's [`V3::vectorize`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn dots4_v3(simd: V3, q: &[pulp::i16x16], v: [&[i8]; 4]) -> [i32; 4] {
    use std::arch::x86_64::__m256i;
    let steps = v.map(|v| &v.as_chunks::<16>().0[..q.len()]);
    let mut acc: [__m256i; 4] = [pulp::bytemuck::cast([0i32; 8]); 4];
    for (k, q) in q.iter().enumerate() {
        let q: __m256i = pulp::bytemuck::cast(*q);
        for (acc, steps) in acc.iter_mut().zip(&steps) {
            let v: __m256i =
                pulp::bytemuck::cast(simd.convert_i8x16_to_i16x16(pulp::bytemuck::cast(steps[k])));
            *acc = simd
                .avx2
                ._mm256_add_epi32(*acc, simd.avx2._mm256_madd_epi16(q, v));
        }
    }
    reduce4(simd, acc)
}

/// `Σ q[i] × v[i]` in `i32` with eight accumulators, so the compiler vectorises it (to
/// `pmaddwd` on any x86-64). Never inlined: inlined into the scan, the compiler kept it
/// scalar, at about three times the cost.
#[inline(never)]
fn dot_i8(q: &[i8], v: &[i8]) -> i32 {
    let (qc, qt) = q.as_chunks::<8>();
    let (vc, vt) = v.as_chunks::<8>();
    let mut acc = [0i32; 8];
    for (a, b) in qc.iter().zip(vc) {
        for l in 0..8 {
            acc[l] += i32::from(a[l]) * i32::from(b[l]);
        }
    }
    let tail: i32 = qt
        .iter()
        .zip(vt)
        .map(|(a, b)| i32::from(*a) * i32::from(*b))
        .sum();
    acc.iter().sum::<i32>() + tail
}

/// Appends `v` quantised to `i8` (symmetric, by its largest magnitude, to the nearest step,
/// ties to even) to `out`; returns the scale that undoes it.
pub fn quantize_into(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    // With AVX2 (and so SSE4.1) rounding is one vector instruction for eight values; on the
    // baseline instruction set a library call per value.
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = V3::try_new() {
        simd.vectorize(|| push_steps(v, scale, out));
        return scale;
    }
    push_steps(v, scale, out);
    scale
}

/// `v / scale` rounded to the nearest step (ties to even) and clamped to ±127, appended to
/// `out`: [`quantize_into`]'s loop, inlined where it is called.
#[inline(always)]
fn push_steps(v: &[f32], scale: f32, out: &mut Vec<i8>) {
    out.extend(
        v.iter()
            .map(|x| (x / scale).round_ties_even().clamp(-127.0, 127.0) as i8),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        crate::text::normalize(&mut v);
        v
    }

    #[test]
    fn quantised_dot_products_match_the_float_ones() {
        for dim in [256, 384, 13] {
            let q = unit(1, dim);
            let query = QueryI8::new(&q);
            for seed in 2..50 {
                let v = unit(seed, dim);
                let mut stored = Vec::new();
                let scale = quantize_into(&v, &mut stored);
                let exact: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
                let mut dot = Vec::new();
                query.dots(std::iter::once(stored.as_slice()), &mut dot);
                let approx = query.scale(scale) * dot[0] as f32;
                assert!((exact - approx).abs() < 0.01, "{dim}: {exact} vs {approx}");
            }
        }
    }

    fn reference(q: &[i8], v: &[i8]) -> i32 {
        q.iter()
            .zip(v)
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum()
    }

    /// Vectors of every length from 0 to 70 (whole steps and tails), with the extreme
    /// values the quantisation gives.
    #[test]
    fn dot_products_are_exact() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for dim in 0..=70 {
            let query: Vec<f32> = (0..dim).map(|_| (next() % 2001) as f32 - 1000.0).collect();
            let q = QueryI8::new(&query);
            let mut stored: Vec<Vec<i8>> = (0..5)
                .map(|_| {
                    (0..dim)
                        .map(|_| ((next() % 255) as i32 - 127) as i8)
                        .collect()
                })
                .collect();
            stored.push(vec![-127; dim]);
            stored.push(vec![127; dim]);
            let want: Vec<i32> = stored.iter().map(|v| reference(&q.v, v)).collect();
            // Each instruction set this CPU has (the widest is what `new` takes).
            for level in [Level::V4, Level::V3, Level::Baseline] {
                let q = QueryI8::at_most(q.v.clone(), q.scale, level);
                // Every count: whole groups of the widest path and the rest.
                for n in 0..=stored.len() {
                    let mut out = Vec::new();
                    q.dots(stored[..n].iter().map(Vec::as_slice), &mut out);
                    assert_eq!(out, want[..n], "dimension {dim}, {n} vectors, {level:?}");
                }
            }
            let scalar: Vec<i32> = stored.iter().map(|v| dot_i8(&q.v, v)).collect();
            assert_eq!(scalar, want, "dimension {dim}, baseline loop");
        }
    }

    /// A stored vector shorter or longer than the query scores 0 on every path, among
    /// vectors of the right length that keep their products (no panic, no truncated sum).
    #[test]
    fn a_vector_of_another_length_scores_zero_on_every_path() {
        for dim in [0usize, 5, 16, 32, 40, 64, 70] {
            let q: Vec<i8> = (0..dim).map(|i| (i % 7) as i8 - 3).collect();
            let right: Vec<i8> = (0..dim).map(|i| (i % 5) as i8 - 2).collect();
            let want = reference(&q, &right);
            let short: Vec<i8> = right.iter().copied().take(dim.saturating_sub(3)).collect();
            let long: Vec<i8> = right.iter().copied().chain([9, 9, 9]).collect();
            let empty: Vec<i8> = Vec::new();
            let all: [&[i8]; 6] = [&right, &short, &long, &right, &empty, &right];
            let expect: Vec<i32> = all
                .iter()
                .map(|v| if v.len() == dim { want } else { 0 })
                .collect();
            for level in [Level::V4, Level::V3, Level::Baseline] {
                let query = QueryI8::at_most(q.clone(), 1.0, level);
                let mut out = Vec::new();
                query.dots(all.iter().copied(), &mut out);
                assert_eq!(out, expect, "dimension {dim}, {level:?}");
            }
        }
    }
}
