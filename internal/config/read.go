package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// errTooLarge is a config file over maxFileSize.
var errTooLarge = fmt.Errorf("is larger than %d MiB", maxFileSize>>20)

// notRegularError is a path that names something other than a regular file.
type notRegularError struct{ mode fs.FileMode }

func (e *notRegularError) Error() string { return "is not a regular file but " + kindOf(e.mode) }

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// readRegular reads path if it is a regular file of at most maxFileSize, and gives
// its mode. It looks before it opens (opening a FIFO waits for a writer), opens
// without blocking where the system allows it (in case the path changed in between),
// and looks again at what it opened.
func readRegular(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, &notRegularError{fi.Mode()}
	}
	fh, err := openNonBlocking(path)
	if err != nil {
		return nil, 0, err
	}
	defer fh.Close()
	if fi, err = fh.Stat(); err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, &notRegularError{fi.Mode()}
	}
	if fi.Size() > maxFileSize {
		return nil, 0, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, 0, err
	}
	if len(data) > maxFileSize {
		return nil, 0, errTooLarge // it grew while it was read
	}
	return data, fi.Mode(), nil
}
