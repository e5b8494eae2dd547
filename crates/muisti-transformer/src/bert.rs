//! A BERT encoder's forward pass over packed sequences.
//!
//! The texts of a batch are laid end to end as one matrix of token rows (no padding): every
//! dense layer is one matrix product over all of them (`matrixmultiply`'s, a block of rows
//! per core), attention
//! runs per text and head over that text's own rows, and the element-wise steps (bias, GELU,
//! residual, layer norm, softmax) are plain loops written so the compiler vectorises them,
//! spread over the cores with rayon. The weights are read from a `model.safetensors` in the
//! layout of Hugging Face's `BertModel` (with or without the `bert.` prefix).

use muisti_embed::safetensors::Tensors;
use rayon::prelude::*;
use serde::Deserialize;

/// The configuration fields the forward pass reads (`config.json`).
#[derive(Deserialize)]
pub(crate) struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    #[serde(default = "default_type_vocab_size")]
    type_vocab_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_position_type")]
    position_embedding_type: String,
}

fn default_type_vocab_size() -> usize {
    2
}

fn default_eps() -> f64 {
    1e-12
}

fn default_position_type() -> String {
    "absolute".to_owned()
}

/// The activation of the feed-forward layer.
#[derive(Clone, Copy)]
enum Activation {
    /// `x·Φ(x)` with the error function, as BERT's `gelu`.
    Gelu,
    Relu,
}

/// A layer norm's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

/// A dense layer: its weight as stored, `(out, in)` row-major, and its bias.
struct Dense {
    weight: Vec<f32>,
    input: usize,
    output: usize,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value in one product: a `(3·hidden, hidden)` weight.
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    ffn_in: Dense,
    ffn_out: Dense,
    ffn_norm: Norm,
}

/// The encoder: embeddings and layers.
pub(crate) struct Bert {
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's embedding (every token of a single text).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    activation: Activation,
}

/// What can go wrong loading or running the model, as text for the embedder's error.
pub(crate) type Result<T> = std::result::Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The weights by name, found with or without a `bert.` prefix.
struct Weights<'a> {
    tensors: Tensors<'a>,
    prefix: &'static str,
}

impl Weights<'_> {
    /// A tensor's values, checked against the shape the configuration implies.
    fn vector(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let full = format!("{}{name}", self.prefix);
        let (dims, values) = self.tensors.read(&full).map_err(err)?;
        if dims != shape {
            return Err(format!(
                "{full} has shape {dims:?}, the configuration implies {shape:?}"
            ));
        }
        Ok(values)
    }

    fn norm(&self, name: &str, hidden: usize, eps: f32) -> Result<Norm> {
        Ok(Norm {
            weight: self.vector(&format!("{name}.weight"), &[hidden])?,
            bias: self.vector(&format!("{name}.bias"), &[hidden])?,
            eps,
        })
    }

    /// Dense layers of the same input stacked along their outputs, as one.
    fn dense(&self, names: &[&str], input: usize, output: usize) -> Result<Dense> {
        let mut weight = Vec::with_capacity(names.len() * output * input);
        let mut bias = Vec::with_capacity(names.len() * output);
        for name in names {
            weight.extend(self.vector(&format!("{name}.weight"), &[output, input])?);
            bias.extend(self.vector(&format!("{name}.bias"), &[output])?);
        }
        Ok(Dense {
            weight,
            input,
            output: names.len() * output,
            bias,
        })
    }
}

impl Bert {
    /// Loads the encoder from `config.json`'s contents and `model.safetensors`' bytes.
    pub(crate) fn load(config: &Config, safetensors: &[u8]) -> Result<Self> {
        let activation = match config.hidden_act.as_str() {
            "gelu" => Activation::Gelu,
            "relu" => Activation::Relu,
            other => return Err(format!("unsupported hidden_act {other:?} (gelu or relu)")),
        };
        if config.position_embedding_type != "absolute" {
            return Err(format!(
                "unsupported position_embedding_type {:?} (absolute)",
                config.position_embedding_type
            ));
        }
        let (hidden, heads) = (config.hidden_size, config.num_attention_heads);
        if heads == 0 || hidden % heads != 0 {
            return Err(format!(
                "hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
            ));
        }
        let tensors = Tensors::parse(safetensors).map_err(err)?;
        let prefix = if tensors.contains("embeddings.word_embeddings.weight") {
            ""
        } else {
            "bert."
        };
        let w = Weights { tensors, prefix };
        let eps = config.layer_norm_eps as f32;
        let inner = config.intermediate_size;
        let mut token_type = w.vector(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, hidden],
        )?;
        token_type.truncate(hidden);
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = format!("encoder.layer.{i}");
                Ok(Layer {
                    qkv: w.dense(
                        &[
                            &format!("{l}.attention.self.query"),
                            &format!("{l}.attention.self.key"),
                            &format!("{l}.attention.self.value"),
                        ],
                        hidden,
                        hidden,
                    )?,
                    attention_out: w.dense(
                        &[&format!("{l}.attention.output.dense")],
                        hidden,
                        hidden,
                    )?,
                    attention_norm: w.norm(
                        &format!("{l}.attention.output.LayerNorm"),
                        hidden,
                        eps,
                    )?,
                    ffn_in: w.dense(&[&format!("{l}.intermediate.dense")], hidden, inner)?,
                    ffn_out: w.dense(&[&format!("{l}.output.dense")], inner, hidden)?,
                    ffn_norm: w.norm(&format!("{l}.output.LayerNorm"), hidden, eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            word: w.vector(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            position: w.vector(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_type,
            embedding_norm: w.norm("embeddings.LayerNorm", hidden, eps)?,
            layers,
            hidden,
            heads,
            activation,
        })
    }

    /// The most tokens a text may have (rows of the position embeddings).
    pub(crate) fn max_positions(&self) -> usize {
        self.position.len() / self.hidden
    }

    /// The length of a text's embedding.
    pub(crate) fn dimensions(&self) -> usize {
        self.hidden
    }

    /// Each text's mean-pooled, unit-length embedding (`texts` are token ids with
    /// `[CLS]` and `[SEP]`, each at most [`Bert::max_positions`] long).
    pub(crate) fn embed(&self, texts: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let h = self.hidden;
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut spans = Vec::with_capacity(texts.len());
        let mut start = 0;
        for t in texts {
            if t.is_empty() || t.len() > self.max_positions() {
                return Err(format!(
                    "a text of {} tokens (1 to {} fit)",
                    t.len(),
                    self.max_positions()
                ));
            }
            spans.push((start, t.len()));
            start += t.len();
        }
        let rows = start;
        let mut x = vec![0f32; rows * h];
        for (t, &(start, _)) in texts.iter().zip(&spans) {
            for (p, &id) in t.iter().enumerate() {
                let id = id as usize;
                let word = self
                    .word
                    .get(id * h..(id + 1) * h)
                    .ok_or_else(|| format!("token id {id} is outside the vocabulary"))?;
                let row = &mut x[(start + p) * h..(start + p + 1) * h];
                let pos = &self.position[p * h..(p + 1) * h];
                for (((o, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                    *o = w + p + t;
                }
            }
        }
        x.par_chunks_mut(h * ROWS_PER_TASK)
            .for_each(|c| self.embedding_norm.apply(c));
        for layer in &self.layers {
            let qkv = layer.qkv.apply(&x, rows)?;
            let context = self.attention(&qkv, &spans);
            let mut a = layer.attention_out.apply(&context, rows)?;
            layer.attention_norm.residual(&mut a, &x);
            x = a;
            let mut inner = layer.ffn_in.apply(&x, rows)?;
            let activation = self.activation;
            inner
                .par_chunks_mut(layer.ffn_in.bias.len() * ROWS_PER_TASK)
                .for_each(|c| activate(activation, c));
            let mut out = layer.ffn_out.apply(&inner, rows)?;
            layer.ffn_norm.residual(&mut out, &x);
            x = out;
        }
        Ok(spans
            .iter()
            .map(|&(start, len)| {
                let mut mean = vec![0f32; h];
                for row in x[start * h..(start + len) * h].chunks_exact(h) {
                    for (m, v) in mean.iter_mut().zip(row) {
                        *m += v;
                    }
                }
                let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt();
                // The mean's own scale (1/len) cancels in the unit length.
                if norm > 0.0 {
                    mean.iter_mut().for_each(|v| *v /= norm);
                }
                mean
            })
            .collect())
    }

    /// Scaled dot-product attention of each text's rows among themselves, every head:
    /// `qkv` holds each row's query, key and value side by side.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)]) -> Vec<f32> {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut context = vec![0f32; qkv.len() / 3];
        let mut parts = Vec::with_capacity(spans.len());
        let mut rest = context.as_mut_slice();
        for &(_, len) in spans {
            let (part, tail) = rest.split_at_mut(len * h);
            parts.push(part);
            rest = tail;
        }
        parts
            .into_par_iter()
            .zip(spans)
            .for_each(|(out, &(start, len))| {
                let rows = &qkv[start * 3 * h..(start + len) * 3 * h];
                // Per head, as small matrices padded with zeros to whole tiles: the scaled
                // queries (len × d), the keys transposed (d × lp) and the values (lp × dp).
                let (lp, dp) = (len.next_multiple_of(TILE), d.next_multiple_of(TILE));
                let mut queries = vec![0f32; len * d];
                let mut keys = vec![0f32; d * lp];
                let mut values = vec![0f32; lp * dp];
                let mut scores = vec![0f32; len * lp];
                let mut mixed = vec![0f32; len * dp];
                for head in 0..self.heads {
                    let (q, k, v) = (head * d, h + head * d, 2 * h + head * d);
                    for (j, row) in rows.chunks_exact(3 * h).enumerate() {
                        for (o, &x) in queries[j * d..(j + 1) * d].iter_mut().zip(&row[q..q + d]) {
                            *o = x * scale;
                        }
                        for (t, &x) in row[k..k + d].iter().enumerate() {
                            keys[t * lp + j] = x;
                        }
                        values[j * dp..j * dp + d].copy_from_slice(&row[v..v + d]);
                    }
                    small_product(&queries, &keys, &mut scores, d, lp);
                    for row in scores.chunks_exact_mut(lp) {
                        let (real, padding) = row.split_at_mut(len);
                        softmax(real);
                        padding.fill(0.0);
                    }
                    small_product(&scores, &values, &mut mixed, lp, dp);
                    for (o, m) in out.chunks_exact_mut(h).zip(mixed.chunks_exact(dp)) {
                        o[head * d..(head + 1) * d].copy_from_slice(&m[..d]);
                    }
                }
            });
        context
    }
}

/// Columns of a tile of [`small_product`].
const TILE: usize = 8;

/// `c = a · b` for small row-major matrices: `a` is `m × k`, `b` is `k × n` with `n` a
/// multiple of [`TILE`], `c` is `m × n` (`m` from `c`'s length). Blocks of 4 rows by 8
/// columns accumulate in registers, each of `b`'s tiles loaded once per 4 rows.
fn small_product(a: &[f32], b: &[f32], c: &mut [f32], k: usize, n: usize) {
    let mut a_rows = a.chunks_exact(4 * k);
    let mut c_rows = c.chunks_exact_mut(4 * n);
    for (a4, c4) in (&mut a_rows).zip(&mut c_rows) {
        tile_rows::<4>(a4, b, c4, k, n);
    }
    let (a_rest, c_rest) = (a_rows.remainder(), c_rows.into_remainder());
    for (a1, c1) in a_rest.chunks_exact(k).zip(c_rest.chunks_exact_mut(n)) {
        tile_rows::<1>(a1, b, c1, k, n);
    }
}

/// `R` rows of [`small_product`].
fn tile_rows<const R: usize>(a: &[f32], b: &[f32], c: &mut [f32], k: usize, n: usize) {
    for col in (0..n).step_by(TILE) {
        let mut acc = [[0f32; TILE]; R];
        for (t, b_row) in b.chunks_exact(n).take(k).enumerate() {
            // Always a whole tile (`n` is a multiple of it); as an array the loop below
            // unrolls into vector registers.
            let Some(bt) = b_row[col..].first_chunk::<TILE>() else {
                continue;
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = a[r * k + t];
                for (acc, &y) in acc.iter_mut().zip(bt) {
                    *acc += x * y;
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            c[r * n + col..r * n + col + TILE].copy_from_slice(acc);
        }
    }
}

/// Rows of the token matrix per parallel task of the element-wise steps.
const ROWS_PER_TASK: usize = 16;

/// The fewest rows of a dense layer's parallel task when its rows are split over the cores
/// (fewer, and its outputs are).
const ROWS_PER_PRODUCT: usize = 32;

impl Dense {
    /// `x · weightᵀ + bias` for `rows` rows of `x`, on all cores: many rows (a batch of
    /// texts) a block of rows per core; few (a query) a block of the outputs per core, as
    /// `(weight · xᵀ)ᵀ`, which would otherwise leave a core idle.
    fn apply(&self, x: &[f32], rows: usize) -> Result<Vec<f32>> {
        let (input, output) = (self.input, self.output);
        if x.len() != rows * input {
            return Err(format!("{} inputs for {rows} rows of {input}", x.len()));
        }
        let threads = rayon::current_num_threads().max(1);
        if rows >= ROWS_PER_PRODUCT * threads {
            // Each row starts as the bias; the product is added to it.
            let mut y = self.bias.repeat(rows);
            let per_task = rows.div_ceil(threads);
            y.par_chunks_mut(output * per_task)
                .zip(x.par_chunks(input * per_task))
                .try_for_each(|(y, x)| product(x, &self.weight, y, input))?;
            return Ok(y);
        }
        let mut yt = vec![0.0f32; output * rows];
        let per_task = output.div_ceil(threads);
        yt.par_chunks_mut(rows * per_task)
            .zip(self.weight.par_chunks(input * per_task))
            .try_for_each(|(yt, w)| product(w, x, yt, input))?;
        let mut y = vec![0.0f32; rows * output];
        for (r, row) in y.chunks_exact_mut(output).enumerate() {
            for (o, (v, b)) in row.iter_mut().zip(&self.bias).enumerate() {
                *v = yt[o * rows + r] + b;
            }
        }
        Ok(y)
    }
}

/// `c += a · bᵀ`, for `a` and `b` of rows of `k` and `c` of rows of `b`'s row count, all
/// row-major.
fn product(a: &[f32], b: &[f32], c: &mut [f32], k: usize) -> Result<()> {
    use ndarray::{ArrayView2, ArrayViewMut2, linalg::general_mat_mul};
    let (m, n) = (a.len() / k, b.len() / k);
    let a = ArrayView2::from_shape((m, k), a).map_err(err)?;
    let b = ArrayView2::from_shape((n, k), b).map_err(err)?;
    let mut c = ArrayViewMut2::from_shape((m, n), c).map_err(err)?;
    general_mat_mul(1.0, &a, &b.t(), 1.0, &mut c);
    Ok(())
}

impl Norm {
    /// `y + x`, normalised row by row, into `y` (a layer's residual connection), on all
    /// cores.
    fn residual(&self, y: &mut [f32], x: &[f32]) {
        let chunk = self.weight.len() * ROWS_PER_TASK;
        y.par_chunks_mut(chunk)
            .zip(x.par_chunks(chunk))
            .for_each(|(y, x)| {
                for (y, x) in y.iter_mut().zip(x) {
                    *y += x;
                }
                self.apply(y);
            });
    }

    /// Normalises each row of `rows` in place (mean 0, variance 1), then scales and shifts.
    fn apply(&self, rows: &mut [f32]) {
        let n = self.weight.len();
        for row in rows.chunks_exact_mut(n) {
            let mean = row.iter().sum::<f32>() / n as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * inv * w + b;
            }
        }
    }
}

fn activate(activation: Activation, xs: &mut [f32]) {
    match activation {
        Activation::Gelu => xs.iter_mut().for_each(|x| *x = gelu(*x)),
        Activation::Relu => xs.iter_mut().for_each(|x| *x = x.max(0.0)),
    }
}

/// `x·Φ(x)`: half of `x·(1 + erf(x/√2))`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function, within 1.5e-7 (Abramowitz and Stegun, 7.1.26), branch-free so that
/// loops over it vectorise.
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
    (1.0 - poly * exp(-a * a)).copysign(x)
}

/// `e^x`, within a few units in the last place for `x` in `[-87, 88]` (clamped outside),
/// branch-free: `2^n · e^r` with `n` the nearest integer to `x/ln 2`.
fn exp(x: f32) -> f32 {
    // Adding 1.5·2^23 rounds to an integer, which then sits in the low mantissa bits.
    const SHIFT: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let x = x.clamp(-87.0, 88.0);
    let k = x * std::f32::consts::LOG2_E + SHIFT;
    let n = k - SHIFT;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2^n: n + 127 as the exponent bits (the low nine bits of k's mantissa plus 127).
    let two_n = f32::from_bits(k.to_bits().wrapping_add(127) << 23);
    p * two_n
}

/// Softmax in place.
fn softmax(xs: &mut [f32]) {
    let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in xs.iter_mut() {
        *x = exp(*x - max);
        sum += *x;
    }
    let inv = 1.0 / sum;
    xs.iter_mut().for_each(|x| *x *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_close_to_the_standard_library() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let (got, want) = (exp(x), x.exp());
            assert!(
                ((got - want) / want).abs() < 2e-6,
                "exp({x}) = {got}, want {want}"
            );
            x += 0.013;
        }
    }

    #[test]
    fn erf_is_within_its_bound() {
        // erf's values at a few points, to eight places.
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.1, 0.112_462_92),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (-0.5, -0.520_499_9),
            (-3.0, -0.999_977_9),
            (6.0, 1.0),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn small_product_is_the_matrix_product() {
        // 6 rows (a block of four and two left over) × 5 inner × 16 columns.
        let (m, k, n) = (6, 5, 16);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
        let mut c = vec![f32::NAN; m * n];
        small_product(&a, &b, &mut c, k, n);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..k).map(|t| a[i * k + t] * b[t * n + j]).sum();
                assert!((c[i * n + j] - want).abs() < 1e-5, "c[{i}][{j}]");
            }
        }
    }

    /// A dense layer over a query's few rows (outputs split over the cores) and over a
    /// batch's many (rows split) is `x · Wᵀ + bias` either way.
    #[test]
    fn a_dense_layer_is_the_product_plus_the_bias_for_few_rows_and_many() {
        let (input, output) = (7, 45);
        let dense = Dense {
            weight: (0..output * input)
                .map(|i| (i % 11) as f32 * 0.25 - 1.0)
                .collect(),
            input,
            output,
            bias: (0..output).map(|o| o as f32 * 0.1).collect(),
        };
        for rows in [
            1,
            3,
            ROWS_PER_PRODUCT * rayon::current_num_threads().max(1) + 5,
        ] {
            let x: Vec<f32> = (0..rows * input)
                .map(|i| (i % 13) as f32 * 0.5 - 3.0)
                .collect();
            let y = dense.apply(&x, rows).expect("applies");
            assert_eq!(y.len(), rows * output);
            for r in 0..rows {
                for o in 0..output {
                    let want: f32 = dense.bias[o]
                        + (0..input)
                            .map(|t| x[r * input + t] * dense.weight[o * input + t])
                            .sum::<f32>();
                    assert!(
                        (y[r * output + o] - want).abs() < 1e-4,
                        "{rows} rows: y[{r}][{o}]"
                    );
                }
            }
        }
        assert!(
            dense.apply(&[1.0; 5], 1).is_err(),
            "a row of the wrong width"
        );
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_the_order() {
        let mut xs = [1.0f32, 3.0, -2.0, 3.0, 80.0];
        softmax(&mut xs);
        assert!((xs.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(xs[4] > 0.999 && xs[1] == xs[3] && xs[1] > xs[0] && xs[0] > xs[2]);
    }
}
