//! `Id` through serde: a decimal string in JSON (JavaScript-safe), a number in
//! CBOR, and `as_u64` for numbers everywhere.

use flakeid::{Generator, Id, Layout};
use serde::{Deserialize, Serialize};

const ID: u64 = 175_928_847_299_117_063;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Order {
    id: Id,
    parent: Option<Id>,
    #[serde(with = "flakeid::serde::as_u64")]
    row: Id,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Link {
    #[serde(with = "flakeid::serde::as_u64::option")]
    parent: Option<Id>,
}

fn cbor<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).unwrap();
    out
}

fn from_cbor<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    ciborium::from_reader(bytes).map_err(|e| e.to_string())
}

#[test]
fn json_writes_a_decimal_string_that_javascript_cannot_round() {
    for v in [0, 1, (1 << 53) + 1, ID, i64::MAX as u64, u64::MAX] {
        let json = serde_json::to_string(&Id::from_u64(v)).unwrap();
        assert_eq!(json, format!("\"{v}\""));
        let back: Id = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_u64(), v);
    }
    // As a number, 2^53 + 1 would not survive a JavaScript reader: f64 rounds it.
    assert_ne!((((1_u64 << 53) + 1) as f64) as u64, (1 << 53) + 1);
}

#[test]
fn json_round_trips_a_struct_with_every_shape() {
    let generator = Generator::builder(Layout::twitter())
        .node_id(3)
        .build()
        .unwrap();
    let order = Order {
        id: generator.next_id(),
        parent: Some(generator.next_id()),
        row: generator.next_id(),
    };
    let json = serde_json::to_value(&order).unwrap();
    assert!(json["id"].is_string());
    assert!(json["parent"].is_string());
    assert!(json["row"].is_u64());
    assert_eq!(json["row"].as_u64(), Some(order.row.to_u64()));
    let back: Order = serde_json::from_value(json).unwrap();
    assert_eq!(back, order);
    let none: Order = serde_json::from_str(r#"{"id":"1","parent":null,"row":2}"#).unwrap();
    assert_eq!(none.parent, None);
}

#[test]
fn json_reads_integers_too_but_nothing_that_is_not_an_id() {
    let id: Id = serde_json::from_str(&ID.to_string()).unwrap();
    assert_eq!(id.to_u64(), ID);
    let max: Id = serde_json::from_str("18446744073709551615").unwrap();
    assert_eq!(max, Id::MAX);
    for (bad, says) in [
        ("-1", "integer `-1`"),
        ("1.5", "floating point"),
        ("\"\"", "empty string"),
        ("\"12a4\"", "invalid character 'a' at position 2"),
        ("\"0x10\"", "invalid character 'x' at position 1"),
        ("\"18446744073709551616\"", "larger than 2^64 - 1"),
        ("18446744073709551616", "floating point"),
        ("true", "boolean"),
        ("null", "null"),
    ] {
        let err = serde_json::from_str::<Id>(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}

#[test]
fn as_u64_is_a_number_in_json_and_refuses_strings() {
    let row: Order =
        serde_json::from_str(r#"{"id":"1","parent":null,"row":18446744073709551615}"#).unwrap();
    assert_eq!(row.row, Id::MAX);
    let err = serde_json::from_str::<Order>(r#"{"id":"1","parent":null,"row":"2"}"#).unwrap_err();
    assert!(err.to_string().contains("invalid type: string"), "{err}");
}

#[test]
fn cbor_writes_the_same_bytes_as_the_u64() {
    for v in [0, 23, 24, 255, 65_536, ID, u64::MAX] {
        let bytes = cbor(&Id::from_u64(v));
        assert_eq!(bytes, cbor(&v), "{v}");
        assert_eq!(from_cbor::<Id>(&bytes), Ok(Id::from_u64(v)));
    }
    // Major type 0 (unsigned), 8-byte argument.
    let mut expected = vec![0x1b];
    expected.extend_from_slice(&ID.to_be_bytes());
    assert_eq!(cbor(&Id::from_u64(ID)), expected);
}

#[test]
fn cbor_round_trips_a_struct_and_refuses_negative_numbers() {
    let order = Order {
        id: Id::from_u64(ID),
        parent: None,
        row: Id::from_u64(ID + 1),
    };
    let bytes = cbor(&order);
    assert_eq!(from_cbor::<Order>(&bytes), Ok(order));
    let err = from_cbor::<Id>(&cbor(&-1_i64)).unwrap_err();
    assert!(err.contains("negative"), "{err}");
    // A value bigger than u64 (a CBOR bignum) is refused, not truncated.
    let err = from_cbor::<Id>(&cbor(&(u128::from(u64::MAX) + 1))).unwrap_err();
    assert!(err.contains("large"), "{err}");
    // Binary formats are read as numbers only.
    assert!(from_cbor::<Id>(&cbor(&"123")).is_err());
}

#[test]
fn as_u64_option_is_a_number_or_null_in_json_and_cbor() {
    for parent in [
        None,
        Some(Id::from_u64(0)),
        Some(Id::from_u64(ID)),
        Some(Id::MAX),
    ] {
        let link = Link { parent };
        let json = serde_json::to_value(&link).unwrap();
        match parent {
            Some(id) => assert_eq!(json["parent"].as_u64(), Some(id.to_u64())),
            None => assert!(json["parent"].is_null()),
        }
        assert_eq!(serde_json::from_value::<Link>(json).unwrap(), link);
        assert_eq!(from_cbor::<Link>(&cbor(&link)), Ok(link));
    }
    for (bad, says) in [
        (r#"{"parent":"2"}"#, "invalid type: string"),
        (r#"{"parent":-1}"#, "integer `-1`"),
    ] {
        let err = serde_json::from_str::<Link>(bad).unwrap_err().to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}
