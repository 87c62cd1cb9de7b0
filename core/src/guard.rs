//! The trait impls every lock and guard of [`Mutex`](crate::Mutex) and
//! [`RwLock`](crate::RwLock) has alike, written once.

/// `Default`, `From<T>` and `Debug` (the value, or `<locked>` when `$try`
/// cannot lock it at once) of a lock type.
macro_rules! lock_impls {
    ($lock:ident, $try:ident) => {
        impl<T: Default> Default for $lock<T> {
            fn default() -> Self {
                $lock::new(T::default())
            }
        }

        impl<T> From<T> for $lock<T> {
            fn from(value: T) -> Self {
                $lock::new(value)
            }
        }

        impl<T: ?Sized + core::fmt::Debug> core::fmt::Debug for $lock<T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let mut d = f.debug_struct(stringify!($lock));
                match self.$try() {
                    Some(guard) => d.field("value", &&*guard),
                    None => d.field("value", &format_args!("<locked>")),
                };
                d.finish()
            }
        }
    };
}

/// `Deref`, `Debug` and `Display` of guards, each reaching the value as
/// `$value` (with `$g` the guard).
macro_rules! shared_deref {
    ($($guard:ident<$($lt:lifetime,)? T> => |$g:ident| $value:expr;)*) => {$(
        impl<$($lt,)? T: ?Sized> Deref for $guard<$($lt,)? T> {
            type Target = T;
            fn deref(&self) -> &T {
                let $g = self;
                // SAFETY: the guard holds a read permit or every permit of the
                // lock its pointer comes from (a mutex has one): no writer can
                // access the value.
                unsafe { $value }
            }
        }
        impl<$($lt,)? T: ?Sized + core::fmt::Debug> core::fmt::Debug for $guard<$($lt,)? T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(&**self, f)
            }
        }
        impl<$($lt,)? T: ?Sized + core::fmt::Display> core::fmt::Display for $guard<$($lt,)? T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(&**self, f)
            }
        }
    )*};
}

/// `DerefMut` of guards that hold every permit.
macro_rules! exclusive_deref {
    ($($guard:ident<$($lt:lifetime,)? T> => |$g:ident| $value:expr;)*) => {$(
        impl<$($lt,)? T: ?Sized> DerefMut for $guard<$($lt,)? T> {
            fn deref_mut(&mut self) -> &mut T {
                let $g = self;
                // SAFETY: the guard holds every permit of the lock: nobody else
                // can access the value, and `&mut self` makes this access unique.
                unsafe { $value }
            }
        }
    )*};
}

/// What `map` returns: `try_map` with a closure that never declines (so
/// `map` has no implementation of its own).
pub(crate) fn never_declined<M, G>(mapped: Result<M, G>) -> M {
    match mapped {
        Ok(mapped) => mapped,
        Err(_) => unreachable!("the closure always returns Some"),
    }
}
