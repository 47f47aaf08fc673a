//! This project's database, whichever one it was generated for: the
//! command line and the tests name `database::Database`, and so read the
//! same on every variant.
{% if database == "postgres" %}
pub use crate::postgres::*;
{%- else %}
pub use crate::sqlite::*;
{%- endif %}
