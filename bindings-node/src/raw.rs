//! Raw Node-API helpers: the raw handle types, reading arguments, argument
//! checks (counts and keys that must be exact JS integers, strings), creating
//! result values, the `native!`
//! macro every entry point is defined with, and turning a caught panic into a
//! JS error (`ERR_VOLT_INTERNAL`) instead of unwinding into Node.

use std::ffi::c_void;
use std::ptr;
use std::sync::{Mutex, MutexGuard};

use napi::sys;

use crate::codes::MAX_JS;

/// The raw Node-API handles every entry point takes and returns.
pub(crate) type RawEnv = sys::napi_env;
pub(crate) type RawValue = sys::napi_value;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (plain lists) is intact.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// Raw Node-API helpers.

/// Reads up to N arguments and the function's data pointer (the `EnvCtx` the
/// function was registered with: `native!` casts it).
///
/// # Safety
/// Called from a Node-API callback with its `env` and `info`.
pub(crate) unsafe fn args<const N: usize>(
    env: RawEnv,
    info: sys::napi_callback_info,
) -> ([RawValue; N], *const c_void) {
    // SAFETY: forwarded contract.
    let (argv, _, data) = unsafe { args_counted::<N>(env, info) };
    (argv, data)
}

/// As [`args`], with the number of arguments the caller passed.
///
/// # Safety
/// As [`args`].
#[inline(always)]
pub(crate) unsafe fn args_counted<const N: usize>(
    env: RawEnv,
    info: sys::napi_callback_info,
) -> ([RawValue; N], usize, *const c_void) {
    let mut argv = [ptr::null_mut(); N];
    let mut argc = N;
    let mut data = ptr::null_mut();
    // SAFETY: argv has room for argc values; missing ones are filled with undefined.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    (argv, argc, data as *const c_void)
}

pub(crate) fn int(env: RawEnv, v: i32) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_int32(env, v, &mut out) };
    out
}

pub(crate) fn double(env: RawEnv, v: f64) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_double(env, v, &mut out) };
    out
}

pub(crate) fn boolean(env: RawEnv, v: bool) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value lookup on the JS thread.
    unsafe { sys::napi_get_boolean(env, v, &mut out) };
    out
}

pub(crate) fn null(env: RawEnv) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value lookup on the JS thread.
    unsafe { sys::napi_get_null(env, &mut out) };
    out
}

/// `d` if it is an integer in `0..=MAX_JS` (NaN is not). The round trip
/// through `u64` is exact in that range, and cheaper than `fract()` (a libm
/// call on baseline x86-64).
fn exact(d: f64) -> Option<u64> {
    if !(d >= 0.0 && d <= MAX_JS as f64) {
        return None;
    }
    let u = d as u64;
    (u as f64 == d).then_some(u)
}

/// A JS number that is an integer in `0..=MAX_JS`.
pub(crate) fn count(env: RawEnv, v: RawValue) -> Option<usize> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    exact(d).map(|u| u as usize)
}

/// A request key (`gen << 32 | slot`, below 2^53) passed back by JS.
pub(crate) fn key_arg(env: RawEnv, v: RawValue) -> Option<u64> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    exact(d)
}

/// A JS string argument as Rust `String` (`None` if it is not a string).
pub(crate) fn string_arg(env: RawEnv, v: RawValue) -> Option<String> {
    let mut len = 0usize;
    // SAFETY: with a null buffer, only reports the UTF-8 length; fails on a
    // non-string.
    let status = unsafe { sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut len) };
    if status != sys::Status::napi_ok {
        return None;
    }
    let mut buf = vec![0u8; len + 1];
    let mut written = 0usize;
    // SAFETY: `buf` has room for `len` bytes plus the NUL Node-API writes.
    unsafe {
        sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr().cast(), buf.len(), &mut written)
    };
    buf.truncate(written);
    // Lone surrogates were replaced by U+FFFD: still valid UTF-8.
    String::from_utf8(buf).ok()
}

/// Defines a raw Node-API function body with `env`, `info` and the EnvCtx.
macro_rules! native {
    // `argc`: also the number of arguments the caller passed (the rest of
    // `argv` is `undefined`).
    ($name:ident, |$env:ident, $ctx:ident, $argv:ident : [$n:literal], $argc:ident| $body:block) => {
        pub(crate) unsafe extern "C" fn $name(
            $env: RawEnv,
            info: sys::napi_callback_info,
        ) -> RawValue {
            // SAFETY: as in the arm below.
            let ($argv, $argc, ctx_ptr) = unsafe { crate::raw::args_counted::<$n>($env, info) };
            // SAFETY: see the arm below.
            let $ctx: &EnvCtx = unsafe { &*ctx_ptr.cast::<EnvCtx>() };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| $body)) {
                Ok(v) => v,
                Err(e) => throw_internal($env, e),
            }
        }
    };
    ($name:ident, |$env:ident, $ctx:ident, $argv:ident : [$n:literal]| $body:block) => {
        pub(crate) unsafe extern "C" fn $name(
            $env: RawEnv,
            info: sys::napi_callback_info,
        ) -> RawValue {
            // SAFETY: called by Node-API with a valid env/info; `data` is the EnvCtx
            // registered with this function, alive until the env cleanup hook, after
            // which no JS (hence no call) runs.
            let ($argv, ctx_ptr) = unsafe { args::<$n>($env, info) };
            // SAFETY: see above.
            let $ctx: &EnvCtx = unsafe { &*ctx_ptr.cast::<EnvCtx>() };
            // A panic must not unwind into Node (it would abort the process):
            // it becomes a JS exception.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| $body)) {
                Ok(v) => v,
                Err(e) => throw_internal($env, e),
            }
        }
    };
}

/// The text of a caught panic (its `&str` or `String` payload).
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// The message of the `ERR_VOLT_INTERNAL` error of a panic saying `what`.
fn internal_message(what: &str) -> String {
    format!("volt-sem: internal error: {what}").replace('\0', " ")
}

/// Throws an `Error` with `code === 'ERR_VOLT_INTERNAL'` for a caught panic.
pub(crate) fn throw_internal(env: RawEnv, panic: Box<dyn std::any::Any + Send>) -> RawValue {
    let msg = std::ffi::CString::new(internal_message(&panic_text(&*panic))).unwrap_or_default();
    // SAFETY: plain Node-API call on the JS thread.
    unsafe {
        sys::napi_throw_error(env, c"ERR_VOLT_INTERNAL".as_ptr(), msg.as_ptr());
    }
    ptr::null_mut()
}

/// The `Error` (not thrown) with `code === 'ERR_VOLT_INTERNAL'` of a panic
/// saying `what` (a panic caught off the JS thread).
pub(crate) fn internal_error(env: RawEnv, what: &str) -> RawValue {
    let code = "ERR_VOLT_INTERNAL";
    let msg = internal_message(what);
    let (mut js_code, mut js_msg, mut err) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain value creation on the JS thread; the strings are valid
    // UTF-8 of the given length.
    unsafe {
        sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut js_code);
        sys::napi_create_string_utf8(env, msg.as_ptr().cast(), msg.len() as isize, &mut js_msg);
        sys::napi_create_error(env, js_code, js_msg, &mut err);
    }
    if err.is_null() {
        return null(env);
    }
    err
}
