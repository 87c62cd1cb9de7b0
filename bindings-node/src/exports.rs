//! Module registration: the raw functions `index.js` calls, bound to a fresh
//! per-environment [`EnvCtx`] that an env cleanup hook
//! tears down, the `maxPermits` constant and the crate's `version`.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ptr;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{JsValue, Object};
use napi::sys;
use napi_derive::napi;

use crate::abandon::js_abandon;
use crate::codes::MAX_JS;
use crate::connect::{
    js_census, js_close_async, js_connect, js_delete_redis, js_disconnect_async, js_inspect,
    js_kind, js_try_acquire_async,
};
use crate::delivery::js_confirm;
use crate::env::{js_set_ref, js_stats, EnvCtx};
use crate::lease::{js_extra, js_unwatch, js_watch, WATCH_PRUNE_MIN};
use crate::named::{
    js_disconnect, js_is_disconnected, js_name, js_open, js_process_held, js_total, js_unlink,
};
use crate::ops::{
    js_acquire, js_available, js_cancel, js_close, js_create, js_debt, js_expire, js_held,
    js_is_closed, js_pending, js_release, js_try_acquire,
};
use crate::raw::double;
use crate::raw::{RawEnv, RawValue};
use crate::registry::{js_attach, js_expire_pins, js_share};
use crate::remote::{EnvShared, Remote};
use crate::removal::js_remove_permits;
use crate::stats::{js_metrics, js_record_timeout, js_wait_buckets};
use crate::teardown::env_cleanup;
use crate::total::{js_reopen, js_set_total};
use crate::view::js_view;
use crate::wake::{js_drain, js_init};

/// Registers the raw functions on `exports`, bound to a fresh per-environment
/// context that an env cleanup hook tears down.
#[napi(module_exports)]
pub fn init(exports: Object) -> napi::Result<()> {
    let env = exports.value().env;
    let target = exports.raw();
    let ctx = Box::into_raw(Box::new(EnvCtx {
        env,
        shared: Arc::new(EnvShared {
            remote: Mutex::new(Remote {
                ids: Vec::new(),
                notified: false,
            }),
            tsfn: Mutex::new(None),
        }),
        slots: RefCell::new(Vec::new()),
        free: RefCell::new(Vec::new()),
        ready: RefCell::new(VecDeque::new()),
        buf: Cell::new((ptr::null_mut(), 0)),
        refs: Cell::new(0),
        delivered: RefCell::new(Vec::new()),
        active_list: RefCell::new(Vec::new()),
        local: RefCell::new(Vec::new()),
        zombies: Cell::new(0),
        initialized: Cell::new(false),
        extras: RefCell::new(HashMap::new()),
        watches: RefCell::new(HashMap::new()),
        next_watch: Cell::new(0),
        watch_prune_at: Cell::new(WATCH_PRUNE_MIN),
    }));
    type Cb = unsafe extern "C" fn(RawEnv, sys::napi_callback_info) -> RawValue;
    let fns: [(&std::ffi::CStr, Cb); 46] = [
        (c"init", js_init),
        (c"create", js_create),
        (c"share", js_share),
        (c"attach", js_attach),
        (c"tryAcquire", js_try_acquire),
        (c"acquire", js_acquire),
        (c"release", js_release),
        (c"cancel", js_cancel),
        (c"expire", js_expire),
        (c"confirm", js_confirm),
        (c"abandon", js_abandon),
        (c"stats", js_stats),
        (c"expirePins", js_expire_pins),
        (c"setRef", js_set_ref),
        (c"pending", js_pending),
        (c"removePermits", js_remove_permits),
        (c"debt", js_debt),
        (c"held", js_held),
        (c"close", js_close),
        (c"drain", js_drain),
        (c"available", js_available),
        (c"isClosed", js_is_closed),
        (c"view", js_view),
        (c"open", js_open),
        (c"unlink", js_unlink),
        (c"total", js_total),
        (c"processHeld", js_process_held),
        (c"disconnect", js_disconnect),
        (c"isDisconnected", js_is_disconnected),
        (c"name", js_name),
        (c"kind", js_kind),
        (c"connect", js_connect),
        (c"deleteRedis", js_delete_redis),
        (c"census", js_census),
        (c"setTotal", js_set_total),
        (c"reopen", js_reopen),
        (c"inspect", js_inspect),
        (c"closeAsync", js_close_async),
        (c"disconnectAsync", js_disconnect_async),
        (c"tryAcquireAsync", js_try_acquire_async),
        (c"extra", js_extra),
        (c"watch", js_watch),
        (c"unwatch", js_unwatch),
        (c"metrics", js_metrics),
        (c"waitBuckets", js_wait_buckets),
        (c"recordTimeout", js_record_timeout),
    ];
    // SAFETY: plain Node-API calls during module init on the JS thread; `ctx` lives
    // until the cleanup hook registered here frees it.
    unsafe {
        let status = sys::napi_add_env_cleanup_hook(env, Some(env_cleanup), ctx.cast());
        if status != sys::Status::napi_ok {
            drop(Box::from_raw(ctx));
            return Err(napi::Error::from_reason(
                "volt-sem: cannot register the env cleanup hook",
            ));
        }
        for (name, cb) in fns {
            let mut f = ptr::null_mut();
            sys::napi_create_function(env, name.as_ptr(), -1, Some(cb), ctx.cast(), &mut f);
            sys::napi_set_named_property(env, target, name.as_ptr(), f);
        }
        sys::napi_set_named_property(
            env,
            target,
            c"maxPermits".as_ptr(),
            double(env, MAX_JS as f64),
        );
        // The crate's version, which binding.js compares with its
        // package.json's: a stale development build next to a newer
        // JavaScript (or a platform package of another release) is refused
        // by name rather than run with calls it does not know.
        let version = env!("CARGO_PKG_VERSION");
        let mut js_version = ptr::null_mut();
        sys::napi_create_string_utf8(
            env,
            version.as_ptr().cast(),
            version.len() as isize,
            &mut js_version,
        );
        sys::napi_set_named_property(env, target, c"version".as_ptr(), js_version);
    }
    Ok(())
}
