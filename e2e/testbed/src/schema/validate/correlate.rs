//! Which old value a new value is compared with on updates (for validation ratcheting and
//! CEL transition rules): object members by name, items of `x-kubernetes-list-type: map`
//! lists by their keys; items of other lists have no counterpart.

use serde_json::Value;

/// The old counterpart of member `key`.
pub(crate) fn member<'a>(old: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    old?.as_object()?.get(key)
}

/// The old counterpart of each item of `items`, by the list's map keys.
pub(crate) fn items<'a>(
    schema: &Value,
    items: &[Value],
    old: Option<&'a Value>,
) -> Vec<Option<&'a Value>> {
    let old_items = old.and_then(Value::as_array);
    let keys = map_keys(schema);
    items
        .iter()
        .map(|item| {
            let old_items = old_items?;
            let keys = keys.as_ref()?;
            old_items
                .iter()
                .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
        })
        .collect()
}

/// The map keys of a `x-kubernetes-list-type: map` list, or `None` for other lists.
fn map_keys(schema: &Value) -> Option<Vec<String>> {
    if schema.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    Some(
        schema
            .get("x-kubernetes-list-map-keys")?
            .as_array()?
            .iter()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn map_lists_correlate_by_key_and_other_lists_not_at_all() {
        let map_list = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]});
        let old = json!([{"name": "a", "n": 1}, {"name": "b", "n": 2}]);
        let new = [json!({"name": "b", "n": 3}), json!({"name": "c"})];
        let found = items(&map_list, &new, Some(&old));
        assert_eq!(found, vec![Some(&old[1]), None]);
        let atomic = json!({"type": "array"});
        assert_eq!(items(&atomic, &new, Some(&old)), vec![None, None]);
    }
}
