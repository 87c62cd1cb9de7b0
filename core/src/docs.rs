//! Longer documentation: how the semaphore works and how to move from tokio.
//!
//! These modules contain no code; they are chapters of the API docs.

pub mod algorithm {
    //! The algorithm and its invariants.
    #![doc = include_str!("docs/algorithm.md")]
}

pub mod tokio_migration {
    //! Moving from `tokio::sync`: the name map and the differences.
    #![doc = include_str!("docs/tokio.md")]
}
