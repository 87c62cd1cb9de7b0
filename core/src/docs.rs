//! Longer documentation: which backend to choose, how the semaphore works
//! and how to move from tokio.
//!
//! These modules contain no code; they are chapters of the API docs.

pub mod choosing_a_backend {
    //! Choosing a backend: local, named (shared memory) or Redis; what each
    //! guarantees, what it costs, and the same code on all three.
    //!
    //! Its examples use the shared-memory and Redis crates, which depend on
    //! this one: they run as doctests of `volt-sem-backend` (which depends
    //! on all three), not of this crate.
    #![cfg_attr(not(doctest), doc = include_str!("docs/backends.md"))]
}

pub mod algorithm {
    //! The algorithm and its invariants.
    #![doc = include_str!("docs/algorithm.md")]
}

pub mod tokio_migration {
    //! Moving from `tokio::sync`: the name map and the differences.
    #![doc = include_str!("docs/tokio.md")]
}
