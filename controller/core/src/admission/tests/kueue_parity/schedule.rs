//! `TestSchedule` (pkg/scheduler/scheduler_test.go).

super::cases! {}
