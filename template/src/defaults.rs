//! Defaults chosen when this project was generated (inbox-kit options
//! `default_workers` and `durability`). Command-line flags override them.

use crate::database::Durability;

/// Worker threads `run` uses unless `--workers` says otherwise.
pub const WORKERS: u16 = {{default_workers}};

/// How hard commits are pushed to disk unless `--durability` says otherwise.
pub const DURABILITY: Durability = Durability::{{durability | capitalize}};
