//! Node binding for volt-sem (being written).
