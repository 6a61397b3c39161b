//! The test and bench quota model.

use super::super::{Fit, FlatFit};

#[test]
fn fits_in_every_dimension() {
    let mut fit = FlatFit::new(vec![10, 4], vec![3, 2]);
    let a = fit.push_candidate(&[5, 2]);
    let b = fit.push_candidate(&[4, 1]);
    assert_eq!((a, b), (0, 1));
    assert!(!fit.fits(), "9 + 3 > 10");
    fit.remove(b);
    assert!(fit.fits());
    fit.restore(b);
    fit.remove(a);
    assert!(fit.fits());
    fit.restore(a);
    assert_eq!(fit.removed_count(), 0);
    assert_eq!(fit.misuse(), 0);
}

#[test]
fn background_usage_is_never_freed() {
    let mut fit = FlatFit::new(vec![10], vec![5]);
    fit.add_background(&[6]);
    let a = fit.push_candidate(&[4]);
    fit.remove(a);
    assert!(!fit.fits());
    fit.restore(a);
}

#[test]
fn missing_dimensions_count_as_zero() {
    let mut fit = FlatFit::new(vec![10, 1], vec![2]);
    let a = fit.push_candidate(&[9]);
    assert!(!fit.fits());
    fit.remove(a);
    assert!(fit.fits());
    fit.restore(a);
}

#[test]
fn contract_breaches_are_counted_not_fatal() {
    let mut fit = FlatFit::new(vec![1], vec![1]);
    let a = fit.push_candidate(&[1]);
    fit.restore(a);
    fit.remove(7);
    fit.remove(a);
    fit.remove(a);
    assert_eq!(fit.misuse(), 3);
    assert_eq!(fit.removed_count(), 1);
    assert!(fit.fits(), "the double remove did not free twice");
}
