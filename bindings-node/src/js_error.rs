//! The JS errors this addon makes: a backend error's `code` and whether it is
//! a `RangeError`, from the error's [`class`](Error::class) and C status name
//! (the backend's error table, so a new error needs nothing here), the error
//! object with the numbers some errors carry, and `ERR_VOLT_UNSUPPORTED`.

use std::ffi::{CStr, CString};
use std::ptr;

use napi::sys;
use volt_sem_backend::{Error, ErrorClass};

use crate::raw::{double, null, RawEnv, RawValue};

/// The `code` of the JS error for `e` (`ERR_` and the C status name:
/// `ERR_VOLT_CLOSED`, `ERR_VOLT_MISMATCH`, ...; Node's own
/// `ERR_OUT_OF_RANGE` for a count out of range, and `ERR_VOLT_CLOSED` for
/// `Disconnected` too), and whether it is a
/// `RangeError` (counts and options out of range).
pub(crate) fn code_of(e: &Error) -> (String, bool) {
    match e.class() {
        ErrorClass::Count => ("ERR_OUT_OF_RANGE".to_owned(), true),
        // Node's convention: a disconnected handle's calls and queued
        // acquires reject as closed (`ERR_VOLT_CLOSED`), the message says
        // "disconnected".
        ErrorClass::Closed => ("ERR_VOLT_CLOSED".to_owned(), false),
        class => (
            format!("ERR_{}", e.status_name()),
            class == ErrorClass::Option,
        ),
    }
}

fn set_number(env: RawEnv, obj: RawValue, name: &CStr, v: f64) {
    // SAFETY: plain Node-API calls on the JS thread.
    unsafe { sys::napi_set_named_property(env, obj, name.as_ptr(), double(env, v)) };
}

/// Throws the JS error of `e` (with `what` in its message) and returns null.
pub(crate) fn throw(env: RawEnv, e: Error, what: &str) -> RawValue {
    let err = error(env, &e, &format!("volt-sem: {what}: {e}"));
    // SAFETY: throws the error just made, on the JS thread.
    unsafe { sys::napi_throw(env, err) };
    ptr::null_mut()
}

/// The JS error of `e` with the message `msg` (not thrown): its `code`, a
/// `RangeError` for counts and options out of range, and the numbers some
/// errors carry (`existing`, `found`, `held`, `errno`).
pub(crate) fn error(env: RawEnv, e: &Error, msg: &str) -> RawValue {
    let (code, range) = code_of(e);
    let msg = msg.replace('\0', " ");
    let mut js_code = ptr::null_mut();
    let mut js_msg = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread; the strings are valid UTF-8
    // of the given length.
    unsafe {
        sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut js_code);
        sys::napi_create_string_utf8(env, msg.as_ptr().cast(), msg.len() as isize, &mut js_msg);
        if range {
            sys::napi_create_range_error(env, js_code, js_msg, &mut err);
        } else {
            sys::napi_create_error(env, js_code, js_msg, &mut err);
        }
    }
    if err.is_null() {
        return null(env);
    }
    match *e {
        Error::TotalMismatch { existing } => set_number(env, err, c"existing", existing as f64),
        Error::VersionMismatch { found, expected } | Error::LibcMismatch { found, expected } => {
            set_number(env, err, c"found", found as f64);
            set_number(env, err, c"expected", expected as f64);
        }
        Error::NotHeld { held } => set_number(env, err, c"held", held as f64),
        Error::Os(errno) => set_number(env, err, c"errno", errno as f64),
        _ => {}
    }
    err
}

/// Throws an `Error` with `code === 'ERR_VOLT_UNSUPPORTED'`.
pub(crate) fn throw_unsupported(env: RawEnv, what: &str) -> RawValue {
    let msg = CString::new(format!("volt-sem: {what} is not supported").replace('\0', " "))
        .unwrap_or_default();
    // SAFETY: plain Node-API call on the JS thread.
    unsafe { sys::napi_throw_error(env, c"ERR_VOLT_UNSUPPORTED".as_ptr(), msg.as_ptr()) };
    ptr::null_mut()
}
