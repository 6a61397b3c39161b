//! The fingerprinted namespace lookup.

use super::super::namespaces::NamespaceIndex;

#[test]
fn lookups_find_exactly_their_namespace() {
    // Same length, first and last 8 bytes: only the full comparison tells them apart.
    let twin_a = "abcdefgh-1111-ijklmnop";
    let twin_b = "abcdefgh-2222-ijklmnop";
    let long = "n".repeat(100);
    let index = NamespaceIndex::new([
        ("a", 1),
        (twin_a, 2),
        ("team", 3),
        (twin_b, 4),
        ("a", 5),
        (long.as_str(), 6),
        ("", 7),
    ]);
    assert_eq!(index.get("a"), Some(&[1, 5][..]));
    assert_eq!(index.get(twin_a), Some(&[2][..]));
    assert_eq!(index.get(twin_b), Some(&[4][..]));
    assert_eq!(index.get("team"), Some(&[3][..]));
    assert_eq!(index.get(&long), Some(&[6][..]));
    assert_eq!(index.get(""), Some(&[7][..]));
    for absent in [
        "b",
        "tea",
        "teams",
        "abcdefgh-3333-ijklmnop",
        &"n".repeat(99),
        &"n".repeat(101),
    ] {
        assert_eq!(index.get(absent), None, "{absent}");
    }
    let empty: NamespaceIndex<'_, i32> = NamespaceIndex::new([]);
    assert_eq!(empty.get("a"), None);
}
