//! The few messages of Google's `google.bigtable.v2` and `google.bigtable.admin.v2` protos that
//! this backend sends, written out by hand for prost (field numbers as in googleapis): a
//! generated crate would bring a second prost and tonic with it for a dozen messages.
#![allow(clippy::derive_partial_eq_without_eq)]

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct RowRange {
    #[prost(oneof = "row_range::Start", tags = "1, 2")]
    pub start: Option<row_range::Start>,
    #[prost(oneof = "row_range::End", tags = "3, 4")]
    pub end: Option<row_range::End>,
}

pub mod row_range {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Start {
        #[prost(bytes, tag = "1")]
        Closed(Vec<u8>),
        #[prost(bytes, tag = "2")]
        Open(Vec<u8>),
    }
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum End {
        #[prost(bytes, tag = "3")]
        Open(Vec<u8>),
        #[prost(bytes, tag = "4")]
        Closed(Vec<u8>),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct RowSet {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub row_keys: Vec<Vec<u8>>,
    #[prost(message, repeated, tag = "2")]
    pub row_ranges: Vec<RowRange>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ColumnRange {
    #[prost(string, tag = "1")]
    pub family_name: String,
    #[prost(oneof = "column_range::Start", tags = "2, 3")]
    pub start: Option<column_range::Start>,
    #[prost(oneof = "column_range::End", tags = "4, 5")]
    pub end: Option<column_range::End>,
}

pub mod column_range {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Start {
        #[prost(bytes, tag = "2")]
        Closed(Vec<u8>),
        #[prost(bytes, tag = "3")]
        Open(Vec<u8>),
    }
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum End {
        #[prost(bytes, tag = "4")]
        Closed(Vec<u8>),
        #[prost(bytes, tag = "5")]
        Open(Vec<u8>),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct TimestampRange {
    #[prost(int64, tag = "1")]
    pub start_timestamp_micros: i64,
    #[prost(int64, tag = "2")]
    pub end_timestamp_micros: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueRange {
    #[prost(oneof = "value_range::Start", tags = "1, 2")]
    pub start: Option<value_range::Start>,
    #[prost(oneof = "value_range::End", tags = "3, 4")]
    pub end: Option<value_range::End>,
}

pub mod value_range {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Start {
        #[prost(bytes, tag = "1")]
        Closed(Vec<u8>),
        #[prost(bytes, tag = "2")]
        Open(Vec<u8>),
    }
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum End {
        #[prost(bytes, tag = "3")]
        Closed(Vec<u8>),
        #[prost(bytes, tag = "4")]
        Open(Vec<u8>),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct RowFilter {
    #[prost(
        oneof = "row_filter::Filter",
        tags = "1, 2, 4, 5, 7, 8, 12, 15, 17, 18"
    )]
    pub filter: Option<row_filter::Filter>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Chain {
    #[prost(message, repeated, tag = "1")]
    pub filters: Vec<RowFilter>,
}

/// Every cell any of the filters passes (a cell two of them pass comes twice).
#[derive(Clone, PartialEq, Message)]
pub struct Interleave {
    #[prost(message, repeated, tag = "1")]
    pub filters: Vec<RowFilter>,
}

pub mod row_filter {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Filter {
        #[prost(message, tag = "1")]
        Chain(super::Chain),
        #[prost(message, tag = "2")]
        Interleave(super::Interleave),
        #[prost(bytes, tag = "4")]
        RowKeyRegex(Vec<u8>),
        #[prost(string, tag = "5")]
        FamilyNameRegex(String),
        #[prost(message, tag = "7")]
        ColumnRange(super::ColumnRange),
        #[prost(message, tag = "8")]
        TimestampRange(super::TimestampRange),
        #[prost(int32, tag = "12")]
        CellsPerColumnLimit(i32),
        #[prost(message, tag = "15")]
        ValueRange(super::ValueRange),
        #[prost(bool, tag = "17")]
        PassAll(bool),
        #[prost(bool, tag = "18")]
        BlockAll(bool),
    }
}

impl RowFilter {
    pub fn of(f: row_filter::Filter) -> RowFilter {
        RowFilter { filter: Some(f) }
    }

    /// The filters in order; one alone is sent as itself.
    pub fn chain(mut filters: Vec<RowFilter>) -> RowFilter {
        if filters.len() == 1 {
            return filters.pop().unwrap_or_default();
        }
        RowFilter::of(row_filter::Filter::Chain(Chain { filters }))
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SetCell {
    #[prost(string, tag = "1")]
    pub family_name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub column_qualifier: Vec<u8>,
    /// -1 = the server's time.
    #[prost(int64, tag = "3")]
    pub timestamp_micros: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeleteFromColumn {
    #[prost(string, tag = "1")]
    pub family_name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub column_qualifier: Vec<u8>,
    #[prost(message, optional, tag = "3")]
    pub time_range: Option<TimestampRange>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeleteFromRow {}

#[derive(Clone, PartialEq, Message)]
pub struct Mutation {
    #[prost(oneof = "mutation::Kind", tags = "1, 2, 4")]
    pub kind: Option<mutation::Kind>,
}

pub mod mutation {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        #[prost(message, tag = "1")]
        SetCell(super::SetCell),
        #[prost(message, tag = "2")]
        DeleteFromColumn(super::DeleteFromColumn),
        #[prost(message, tag = "4")]
        DeleteFromRow(super::DeleteFromRow),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ReadRowsRequest {
    #[prost(string, tag = "1")]
    pub table_name: String,
    #[prost(message, optional, tag = "2")]
    pub rows: Option<RowSet>,
    #[prost(message, optional, tag = "3")]
    pub filter: Option<RowFilter>,
    #[prost(int64, tag = "4")]
    pub rows_limit: i64,
    #[prost(string, tag = "5")]
    pub app_profile_id: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringValue {
    #[prost(string, tag = "1")]
    pub value: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct BytesValue {
    #[prost(bytes = "vec", tag = "1")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CellChunk {
    #[prost(bytes = "vec", tag = "1")]
    pub row_key: Vec<u8>,
    #[prost(message, optional, tag = "2")]
    pub family_name: Option<StringValue>,
    #[prost(message, optional, tag = "3")]
    pub qualifier: Option<BytesValue>,
    #[prost(int64, tag = "4")]
    pub timestamp_micros: i64,
    #[prost(bytes = "vec", tag = "6")]
    pub value: Vec<u8>,
    #[prost(int32, tag = "7")]
    pub value_size: i32,
    #[prost(oneof = "cell_chunk::Status", tags = "8, 9")]
    pub status: Option<cell_chunk::Status>,
}

pub mod cell_chunk {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Status {
        #[prost(bool, tag = "8")]
        ResetRow(bool),
        #[prost(bool, tag = "9")]
        CommitRow(bool),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ReadRowsResponse {
    #[prost(message, repeated, tag = "1")]
    pub chunks: Vec<CellChunk>,
    #[prost(bytes = "vec", tag = "2")]
    pub last_scanned_row_key: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutateRowsEntry {
    #[prost(bytes = "vec", tag = "1")]
    pub row_key: Vec<u8>,
    #[prost(message, repeated, tag = "2")]
    pub mutations: Vec<Mutation>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutateRowsRequest {
    #[prost(string, tag = "1")]
    pub table_name: String,
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<MutateRowsEntry>,
    #[prost(string, tag = "3")]
    pub app_profile_id: String,
}

/// `google.rpc.Status` (its `details` left undecoded).
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutateRowsResultEntry {
    #[prost(int64, tag = "1")]
    pub index: i64,
    #[prost(message, optional, tag = "2")]
    pub status: Option<Status>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutateRowsResponse {
    #[prost(message, repeated, tag = "1")]
    pub entries: Vec<MutateRowsResultEntry>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CheckAndMutateRowRequest {
    #[prost(string, tag = "1")]
    pub table_name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub row_key: Vec<u8>,
    #[prost(message, repeated, tag = "4")]
    pub true_mutations: Vec<Mutation>,
    #[prost(message, repeated, tag = "5")]
    pub false_mutations: Vec<Mutation>,
    #[prost(message, optional, tag = "6")]
    pub predicate_filter: Option<RowFilter>,
    #[prost(string, tag = "7")]
    pub app_profile_id: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct CheckAndMutateRowResponse {
    #[prost(bool, tag = "1")]
    pub predicate_matched: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct ReadModifyWriteRule {
    #[prost(string, tag = "1")]
    pub family_name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub column_qualifier: Vec<u8>,
    #[prost(int64, tag = "4")]
    pub increment_amount: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ReadModifyWriteRowRequest {
    #[prost(string, tag = "1")]
    pub table_name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub row_key: Vec<u8>,
    #[prost(message, repeated, tag = "3")]
    pub rules: Vec<ReadModifyWriteRule>,
    #[prost(string, tag = "4")]
    pub app_profile_id: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct DataCell {
    #[prost(int64, tag = "1")]
    pub timestamp_micros: i64,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DataColumn {
    #[prost(bytes = "vec", tag = "1")]
    pub qualifier: Vec<u8>,
    #[prost(message, repeated, tag = "2")]
    pub cells: Vec<DataCell>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DataFamily {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub columns: Vec<DataColumn>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DataRow {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(message, repeated, tag = "2")]
    pub families: Vec<DataFamily>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ReadModifyWriteRowResponse {
    #[prost(message, optional, tag = "1")]
    pub row: Option<DataRow>,
}

// ---- google.bigtable.admin.v2 ----

#[derive(Clone, PartialEq, Message)]
pub struct Duration {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct GcRule {
    #[prost(oneof = "gc_rule::Rule", tags = "1, 2, 4")]
    pub rule: Option<gc_rule::Rule>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GcUnion {
    #[prost(message, repeated, tag = "1")]
    pub rules: Vec<GcRule>,
}

pub mod gc_rule {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Rule {
        #[prost(int32, tag = "1")]
        MaxNumVersions(i32),
        #[prost(message, tag = "2")]
        MaxAge(super::Duration),
        /// Deletes what any of the rules would.
        #[prost(message, tag = "4")]
        Union(super::GcUnion),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ColumnFamily {
    #[prost(message, optional, tag = "1")]
    pub gc_rule: Option<GcRule>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Table {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(btree_map = "string, message", tag = "3")]
    pub column_families: std::collections::BTreeMap<String, ColumnFamily>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateTableRequest {
    #[prost(string, tag = "1")]
    pub parent: String,
    #[prost(string, tag = "2")]
    pub table_id: String,
    #[prost(message, optional, tag = "3")]
    pub table: Option<Table>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ListTablesRequest {
    #[prost(string, tag = "1")]
    pub parent: String,
    /// 1 = NAME_ONLY.
    #[prost(int32, tag = "2")]
    pub view: i32,
    #[prost(string, tag = "3")]
    pub page_token: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct ListTablesResponse {
    #[prost(message, repeated, tag = "1")]
    pub tables: Vec<Table>,
    #[prost(string, tag = "2")]
    pub next_page_token: String,
}
