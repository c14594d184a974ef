package testkit

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	_ "modernc.org/sqlite" // the driver CheckpointRows reads with
)

// OldJournalSuffix ends the name of a journal that releases before the
// thread database's schema 5 kept beside it ("state.db" + OldJournalSuffix)
// and replayed as SQL when they opened the database.
const OldJournalSuffix = "-oplog-0007060504030201"

// OldJournal is a journal in that old format ("DAOPLOG1", an 8-byte
// generation, then records of a length, a CRC-32C and a payload of a record
// number and statements) holding one statement given as SQL text: what an
// agent could plant to make such a release run SQL of its choosing. With
// ascii set, a numbered SQL comment is added, the first number for which
// every byte of the file is below 0x80, so that the file can be written as
// text (by write_file); the SQL must then be short.
func OldJournal(sqlText string, ascii bool) []byte {
	for i := 0; i < 10000; i++ {
		text := sqlText
		if ascii {
			text = fmt.Sprintf("%s -- %04d", sqlText, i)
		}
		payload := binary.LittleEndian.AppendUint64(nil, 1) // record number
		payload = append(payload, 's')                      // a statement given as SQL text
		payload = binary.AppendUvarint(payload, uint64(len(text)))
		payload = append(payload, text...)
		payload = binary.AppendUvarint(payload, 0) // no arguments
		out := append([]byte("DAOPLOG1"), 1, 2, 3, 4, 5, 6, 7, 0)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(payload)))
		out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
		out = append(out, payload...)
		if !ascii || !bytes.ContainsFunc(out, func(r rune) bool { return r >= 0x80 }) {
			return out
		}
	}
	panic("no ASCII journal for " + sqlText)
}

// AttackSQL is a forged journal's statement: it ends the replay's
// transaction, attaches (and so creates) the database pwned and writes to
// it, then deletes the thread database's checkpoints.
func AttackSQL(pwned string) string {
	return "COMMIT; ATTACH DATABASE '" + pwned + "' AS x; CREATE TABLE x.t(a); DETACH DATABASE x; DELETE FROM checkpoints; BEGIN IMMEDIATE"
}

// CheckpointRows counts the checkpoints in the thread database at path,
// opened read-only with nothing of the saver's.
func CheckpointRows(t testing.TB, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM checkpoints`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
