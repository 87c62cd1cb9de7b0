//! The macro that turns the error table of [`crate::error`] into the
//! [`Error`](crate::Error) enum and everything derived from it; the table
//! itself (and how to add an error) is there.

/// Expands the table: the `Error` enum, `code()`, `status()`,
/// `status_name()`, `class()`, `Display`, and [`STATUSES`](crate::error::STATUSES)
/// (every C status, with its C documentation, for `volt-sem-ffi`'s generated
/// `volt_status` enum).
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
                $(#[doc = $doc:literal])*
                $name:ident
                    $( ( $tbind:ident : $tty:ty ) )?
                    $( {
                        $( $(#[doc = $fdoc:literal])* $fname:ident : $fty:ty ),* $(,)?
                    } )?
                => $code:literal, $class:ident, $msg:tt,
                    $(#[doc = $cdoc:literal])*
                    $cname:ident = $cnum:literal;
            )*
        }
    ) => {
        /// Why an operation on a [`Semaphore`](crate::Semaphore) failed.
        ///
        /// The first group can come from any backend; the next only from a named
        /// (shared) one, and mean the same as the [`volt_sem_shm::Error`] variant of
        /// the same name; the last only from the Redis backend (the `redis` feature),
        /// meaning the same as the `volt_sem_redis::Error` variant of the same name.
        /// No variant ever carries a password.
        #[non_exhaustive]
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum Error {
            $(
                $(#[doc = $doc])*
                $name
                    $( ( $tty ) )?
                    $( { $( $(#[doc = $fdoc])* $fname : $fty ),* } )?,
            )*
        }

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

        impl fmt::Display for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(
                        #[allow(unused_variables)]
                        Error::$name
                            $( ( $tbind ) )?
                            $( { $( $fname ),* } )?
                        => error_table!(@display self, f, $msg),
                    )*
                }
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
    // The message of an error that reads as the shm crate's own.
    (@display $self:ident, $f:ident, shm) => {
        shm_display($self, $f)
    };
    // A format string; it may name the variant's fields.
    (@display $self:ident, $f:ident, $msg:literal) => {
        $f.write_fmt(format_args!($msg))
    };
}
