//! Python binding for volt-sem (being written).
