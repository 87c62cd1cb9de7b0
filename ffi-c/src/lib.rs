//! C ABI for volt-sem (being written).
