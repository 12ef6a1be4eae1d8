-- Find the slice holding a byte of a file (reads that resume mid-file) without
-- walking every slice of the file.
CREATE INDEX blob_slices_by_offset ON blob_slices (file_id, offset);
