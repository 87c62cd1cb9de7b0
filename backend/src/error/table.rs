//! The macro that turns the error table of [`crate::error`] into the
//! [`Error`](crate::Error) enum and everything derived from it; the table
//! itself (and how to add an error) is there.

/// Expands what the table's rows say beyond the enum and its messages
/// (`volt_sem::error_enum!` declares those, then calls this with each row's
/// columns): `code()`, `status()`, `status_name()`, `class()`, the
/// conversions from (and to) the lower crates' errors of the same name (a
/// row's `[shm redis]`), and
/// [`STATUSES`](crate::error::STATUSES) (every C status, with its C
/// documentation, for `volt-sem-ffi`'s generated `volt_status` enum).
macro_rules! error_table {
    (
        statuses {
            $(
                $(#[doc = $sdoc:literal])*
                $sname:ident = $snum:literal;
            )*
        }
        errors {
            $(
                $name:ident $( ( $tbind:ident ) )? $( { $( $fname:ident ),* } )?
                [
                    [ $( $also:ident )* ] $code:literal, $class:ident,
                    $(#[doc = $cdoc:literal])*
                    $cname:ident = $cnum:literal;
                ]
            )*
        }
    ) => {
        impl Error {
            /// A stable, upper-case name for the error (`"CLOSED"`,
            /// `"TOTAL_MISMATCH"`, ...), for bindings that expose a code rather
            /// than a type (logs, Python's `code` attribute).
            pub fn code(&self) -> &'static str {
                match self {
                    $( Error::$name { .. } => $code, )*
                }
            }

            /// The C status of the error (a `volt_status` value of
            /// `volt_sem.h`): stable, part of the ABI. Several errors may share
            /// one (`VOLT_INVALID_ARGUMENT`).
            pub fn status(&self) -> i32 {
                match self {
                    $( Error::$name { .. } => $cnum, )*
                }
            }

            /// The name of [`status`](Self::status) (`"VOLT_CLOSED"`, ...);
            /// Node's `err.code` is it with `ERR_` in front.
            pub fn status_name(&self) -> &'static str {
                match self {
                    $( Error::$name { .. } => stringify!($cname), )*
                }
            }

            /// What kind of failure this is, which the bindings map to an
            /// exception class or a JS error type.
            pub fn class(&self) -> ErrorClass {
                match self {
                    $( Error::$name { .. } => ErrorClass::$class, )*
                }
            }
        }

        /// The variant of the same name (every shm error has one).
        impl From<ShmError> for Error {
            fn from(e: ShmError) -> Self {
                $(
                    error_table!(@if shm [$($also)*]
                        let e = match e {
                            ShmError::$name $( ($tbind) )? $( { $($fname),* } )?
                                => return Error::$name $( ($tbind) )? $( { $($fname),* } )?,
                            e => e,
                        };
                    );
                )*
                // The shm error is non_exhaustive: a later variant is reported
                // as an OS-level failure with no errno rather than lost.
                let _ = e;
                Error::Os(0)
            }
        }

        /// The shm crate's error of the same meaning (for its messages); `Err`
        /// for the variants it does not have ([`Error::Overflow`], which only a
        /// local semaphore raises, and the Redis-only ones).
        impl TryFrom<Error> for ShmError {
            type Error = ();

            fn try_from(e: Error) -> Result<Self, ()> {
                $(
                    error_table!(@if shm [$($also)*]
                        let e = match e {
                            Error::$name $( ($tbind) )? $( { $($fname),* } )?
                                => return Ok(ShmError::$name $( ($tbind) )? $( { $($fname),* } )?),
                            e => e,
                        };
                    );
                )*
                let _ = e;
                Err(())
            }
        }

        /// The variant of the same name (every Redis error has one).
        #[cfg(feature = "redis")]
        impl From<volt_sem_redis::Error> for Error {
            fn from(e: volt_sem_redis::Error) -> Self {
                $(
                    error_table!(@if redis [$($also)*]
                        let e = match e {
                            volt_sem_redis::Error::$name $( ($tbind) )? $( { $($fname),* } )?
                                => return Error::$name $( ($tbind) )? $( { $($fname),* } )?,
                            e => e,
                        };
                    );
                )*
                // The Redis error is non_exhaustive: a later variant keeps its
                // message as a protocol-level failure rather than being lost.
                Error::Protocol(e.to_string())
            }
        }

        /// Every C status, by number (the non-error ones first, then one row per
        /// error, in table order; errors sharing a status repeat it with no
        /// documentation). `volt-sem-ffi` generates its `volt_status` enum from
        /// this; not meant for other users.
        #[doc(hidden)]
        pub const STATUSES: &[Status] = &[
            $( Status { number: $snum, name: stringify!($sname), doc: &[$($sdoc),*], error: None }, )*
            $( Status { number: $cnum, name: stringify!($cname), doc: &[$($cdoc),*], error: Some(stringify!($name)) }, )*
        ];
    };
    // `$then` when the row's `[...]` names the crate.
    (@if shm [shm $($rest:ident)*] $($then:tt)*) => { $($then)* };
    (@if redis [redis $($rest:ident)*] $($then:tt)*) => { $($then)* };
    (@if $crate_:ident [$other:ident $($rest:ident)*] $($then:tt)*) => {
        error_table!(@if $crate_ [$($rest)*] $($then)*)
    };
    (@if $crate_:ident [] $($then:tt)*) => {};
}
