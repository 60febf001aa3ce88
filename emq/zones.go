package emq

import (
	"archive/zip"
	_ "embed" // zoneinfo
	"io"
	"strings"
	"sync"
	"time"

	"github.com/echomq/emq/errors"
)

// zoneinfo is the IANA time zone database as the Go release that built the
// module ships it (lib/time/zoneinfo.zip; the IANA puts the data in the
// public domain). Schedules take their zones from it alone, never from the
// host's /usr/share/zoneinfo — which may differ from host to host or be
// missing, and which a tick would read from disk in the server's main
// thread.
//
//go:generate sh -c "cp \"$(go env GOROOT)/lib/time/zoneinfo.zip\" ."
//go:embed zoneinfo.zip
var zoneinfo string

// zoneFiles indexes zoneinfo by zone name, once, on first use: it is the
// same for the life of the process. An archive that did not read would
// index nothing, every zone unknown.
var zoneFiles = sync.OnceValue(func() map[string]*zip.File {
	r, err := zip.NewReader(strings.NewReader(zoneinfo), int64(len(zoneinfo)))
	if err != nil {
		return nil
	}
	files := make(map[string]*zip.File, len(r.File))
	for _, f := range r.File {
		files[f.Name] = f
	}
	return files
})

// location is the zone named by tz, UTC when empty.
func location(tz []byte) (*time.Location, error) {
	if len(tz) == 0 {
		return time.UTC, nil
	}
	if f := zoneFiles()[string(tz)]; f != nil {
		if loc, err := zone(f); err == nil {
			return loc, nil
		}
	}
	return nil, errors.New(errors.Shape, "unknown time zone %q", clip(string(tz)))
}

// zone reads the zone of archive file f.
func zone(f *zip.File) (*time.Location, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, f.UncompressedSize64)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return time.LoadLocationFromTZData(f.Name, data)
}
