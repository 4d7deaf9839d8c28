package journal

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// An entry an earlier version ended closed_no_status (the host closed the
// command's channel without an exit status or signal) is a command whose
// end no one saw, as one ended so now is (no_status): it reads
// STATUS_UNKNOWN, guards an identical command, and takes resolutions.
func TestClosedNoStatusOfAnEarlierVersionIsUnknown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openTest(t, path, "inst-old")
	e := mustStart(t, j, newEntry("make migrate"))
	if _, err := j.Dispatched(e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := j.End(e.ID, End{Outcome: OutcomeClosedNoStatus, BytesOut: 12, OutputTail: []byte("migrating...")}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// As the earlier version left the file: its guard index held only
	// the entries it read as unknown, and was marked so.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Put(keyGuard, []byte("host-key without port, login user")); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketUnresolved); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bucketUnresolved)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	j = openTest(t, path, "inst-new")
	got, err := j.Get(e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status() != StatusUnknown {
		t.Fatalf("an entry an earlier version ended closed_no_status reads %s (%s)", got.Status(), got.Describe())
	}
	if err := j.Start(newEntry("make migrate")); !errors.Is(err, ErrUnresolved) {
		t.Fatalf("an identical command after it: %v", err)
	}
	r, err := j.Resolve(e.ID, Resolution{By: ByUser, Result: ResultNotStarted, Evidence: "no migration in the schema log"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status() != StatusRetrySafe || r.End == nil || string(r.End.OutputTail) != "migrating..." {
		t.Fatalf("resolved: %s %+v", r.Status(), r.End)
	}
	if err := j.Start(newEntry("make migrate")); err != nil {
		t.Fatalf("an identical command once it is resolved: %v", err)
	}
}
