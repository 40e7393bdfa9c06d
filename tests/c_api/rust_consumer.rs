// libposenc from Rust (issue 24): an extern "C" block over include/posenc/c/posenc.h, no crates. Applies RoPE
// (half-split, float32, a cache) in place and checks it against RoFormer's rotation computed here in f64
// (Su et al. 2021, eq. 34), then checks that a rejected call (a null tensor) returns a status and writes nothing.
//   rustc --edition 2021 -L <dir of libposenc.so> -l posenc -C link-args=-Wl,-rpath,<dir> rust_consumer.rs
use std::os::raw::{c_char, c_int, c_void};

#[repr(C)]
#[derive(Clone, Copy)]
struct Tensor {
    struct_size: u32,
    dtype: i32,
    rank: i32,
    reserved: i32,
    data: *mut c_void,
    shape: [i64; 4],
    strides: [i64; 4],
}

#[repr(C)]
struct Positions {
    struct_size: u32,
    kind: i32,
    index_type: i32,
    reserved: i32,
    offset: i64,
    values: *const c_void,
    batch: i64,
    length: i64,
    row_stride: i64,
}

#[repr(C)]
struct RopeConfig {
    struct_size: u32,
    style: i32,
    head_dim: i64,
    rotary_dim: i64,
    rotary_offset: i64,
    base: f64,
    scaling: i32,
    policy: i32,
    factor: f64,
    original_max_positions: i64,
    beta_fast: f64,
    beta_slow: f64,
    truncate: i32,
    reserved: i32,
    mscale: f64,
    mscale_all_dim: f64,
    attention_factor: f64,
    low_freq_factor: f64,
    high_freq_factor: f64,
    short_factor: *const f64,
    long_factor: *const f64,
    longrope_factor_count: i64,
    freq_factors: *const f64,
    freq_factor_count: i64,
}

#[repr(C)]
struct Opaque {
    _private: [u8; 0],
}

const F32: c_int = 1;
const HALF_SPLIT: i32 = 1;

extern "C" {
    fn posenc_version() -> *const c_char;
    fn posenc_rope_config_init(config: *mut RopeConfig);
    fn posenc_rope_plan_create(config: *const RopeConfig, seq_len: i64, out: *mut *mut Opaque) -> c_int;
    fn posenc_rope_plan_destroy(plan: *mut Opaque);
    fn posenc_rope_cache_create(plan: *const Opaque, max_positions: i64, dtype: c_int, out: *mut *mut Opaque) -> c_int;
    fn posenc_rope_cache_destroy(cache: *mut Opaque);
    fn posenc_tensor_contiguous(data: *mut c_void, dtype: c_int, rank: i32, shape: *const i64) -> Tensor;
    fn posenc_positions_offset(offset: i64) -> Positions;
    fn posenc_apply_rope(plan: *const Opaque, cache: *const Opaque, input: *const Tensor, output: *const Tensor,
                         pos: *const Positions, inverse: i32) -> c_int;
    fn posenc_last_error(buf: *mut c_char, size: usize) -> usize;
}

fn last_error() -> String {
    let mut buf = vec![0u8; 512];
    unsafe { posenc_last_error(buf.as_mut_ptr() as *mut c_char, buf.len()) };
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn main() {
    let (n, l, h, d, p0, base) = (1i64, 4i64, 3i64, 16i64, 100i64, 500000.0f64);
    let mut cfg: RopeConfig = unsafe { std::mem::zeroed() };
    unsafe { posenc_rope_config_init(&mut cfg) };
    assert_eq!(cfg.struct_size as usize, std::mem::size_of::<RopeConfig>(), "posenc_rope_config layout");
    cfg.head_dim = d;
    cfg.base = base;
    cfg.style = HALF_SPLIT;
    let mut plan: *mut Opaque = std::ptr::null_mut();
    let mut cache: *mut Opaque = std::ptr::null_mut();
    unsafe {
        assert_eq!(posenc_rope_plan_create(&cfg, 0, &mut plan), 0, "{}", last_error());
        assert_eq!(posenc_rope_cache_create(plan, 1024, F32, &mut cache), 0, "{}", last_error());
    }
    let count = (n * l * h * d) as usize;
    let x0: Vec<f32> = (0..count).map(|i| ((i * 5 % 17) as f32 - 8.0) / 8.0).collect();
    let mut x = x0.clone();
    let shape = [n, l, h, d];
    let pos = unsafe { posenc_positions_offset(p0) };
    let t = unsafe { posenc_tensor_contiguous(x.as_mut_ptr() as *mut c_void, F32, 4, shape.as_ptr()) };
    let status = unsafe { posenc_apply_rope(std::ptr::null(), cache, &t, std::ptr::null(), &pos, 0) };
    assert_eq!(status, 0, "{}", last_error());
    let half = (d / 2) as usize;
    let mut worst = 0.0f64;
    for tok in 0..l as usize {
        let p = (p0 as usize + tok) as f64;
        for head in 0..h as usize {
            let row = (tok * h as usize + head) * d as usize;
            for i in 0..half {
                let theta = p * base.powf(-2.0 * i as f64 / d as f64);
                let (a, b) = (x0[row + i] as f64, x0[row + i + half] as f64);
                let want = [a * theta.cos() - b * theta.sin(), b * theta.cos() + a * theta.sin()];
                let got = [x[row + i] as f64, x[row + i + half] as f64];
                for k in 0..2 {
                    worst = worst.max((got[k] - want[k]).abs());
                }
            }
        }
    }
    // float32 storage and a float32 cos/sin table: a few float32 ulps of values below 2 in magnitude.
    assert!(worst < 2e-6, "RoPE from Rust differs from the formula by {}", worst);

    let before = x.clone();
    let status = unsafe { posenc_apply_rope(std::ptr::null(), cache, std::ptr::null(), std::ptr::null(), &pos, 0) };
    let message = last_error();
    assert_eq!(status, 1, "a null tensor gave status {}", status);
    assert!(message.contains("is null"), "message: {}", message);
    assert!(x == before, "a rejected call wrote");
    unsafe {
        posenc_rope_cache_destroy(cache);
        posenc_rope_plan_destroy(plan);
    }
    let version = unsafe { std::ffi::CStr::from_ptr(posenc_version()) }.to_string_lossy();
    println!("rust: ok (posenc {}, max error {:.1e}; rejected: {})", version, worst, message);
}
