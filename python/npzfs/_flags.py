"""The flags of the npzfs commands the Python API runs, keyed by keyword
argument name: (kind, usage). kind is "bool" (the bare flag, for True),
"int" (--flag=N), "duration" (--flag=DURATION), "value" (--flag=TEXT) or
"list" (--flag=TEXT for each item).

Made from the command line's flag definitions by
go test ./cmd/npzfs -run TestPythonFlags -update: do not edit.
"""

FLAGS = {
    "index": {
        "index_dir": ("value", "keep saved indexes in DIR"),
        "index_cache_mb": ("int", "bound of --index-dir (default 1024)"),
        "verify": ("bool", "read every member whole, check saved indexes"),
        "workers": ("int", "inflate with N threads (default one a core)"),
        "sidecar": ("bool", "also write ARCHIVE.npzidx beside the archive"),
        "sidecar_file": ("value", "write the sidecar of one archive to FILE"),
        "header": ("list", "for http(s): send a header (repeatable)"),
        "endpoint": ("value", "for s3://: an S3-compatible server"),
        "no_sign_request": ("bool", "for s3://: send unsigned requests"),
        "disk_cache": ("value", "for a URL: keep fetched blocks in DIR too"),
        "disk_cache_mb": ("int", "bound of --disk-cache (default 10240)"),
        "remote_timeout": ("duration", "for a URL: give a request up (default 2m0s)"),
        "stall_timeout": ("duration", "for a URL: retry a silent request (default 20s)"),
    },
    "ls": {
        "verify": ("bool", "read every member whole, check CRC-32s"),
        "json": ("bool", "print one JSON document"),
        "human_readable": ("bool", "sizes with units (1.5K, 234M), as ls -h"),
        "header": ("list", "for http(s): send a header (repeatable)"),
        "endpoint": ("value", "for s3://: an S3-compatible server"),
        "no_sign_request": ("bool", "for s3://: send unsigned requests"),
        "disk_cache": ("value", "for a URL: keep fetched blocks in DIR too"),
        "disk_cache_mb": ("int", "bound of --disk-cache (default 10240)"),
        "remote_timeout": ("duration", "for a URL: give a request up (default 2m0s)"),
        "stall_timeout": ("duration", "for a URL: retry a silent request (default 20s)"),
    },
    "mount": {
        "foreground": ("bool", "stay attached; log to stderr"),
        "debug": ("bool", "log every FUSE request and reply"),
        "options": ("list", "mount options: allow_other, noexec, ..."),
        "log": ("value", "append the daemon's messages to FILE"),
        "memory_mb": ("int", "the daemon's memory target (default 512)"),
        "cache_mb": ("int", "memory for inflated spans (1/32 of it)"),
        "index_mb": ("int", "memory for checkpoints (1/8 of it)"),
        "readahead_kb": ("int", "readahead (root only) (default 1016 or 1024)"),
        "max_header_kb": ("int", "longest .npy header read (default 1024)"),
        "max_open": ("int", "for a folder: archives kept open (default 128)"),
        "remote_cache_mb": ("int", "for a URL: memory for blocks (1/2 of it)"),
        "list_ttl": ("duration", "remote folder: listings kept (default 1m0s)"),
        "header": ("list", "for http(s): send a header (repeatable)"),
        "endpoint": ("value", "for s3://: an S3-compatible server"),
        "no_sign_request": ("bool", "for s3://: send unsigned requests"),
        "disk_cache": ("value", "for a URL: keep fetched blocks in DIR too"),
        "disk_cache_mb": ("int", "bound of --disk-cache (default 10240)"),
        "remote_timeout": ("duration", "for a URL: give a request up (default 2m0s)"),
        "stall_timeout": ("duration", "for a URL: retry a silent request (default 20s)"),
        "index_dir": ("value", "keep saved indexes in DIR"),
        "index_cache_mb": ("int", "bound of --index-dir (default 1024)"),
        "no_index": ("bool", "neither read nor write saved indexes"),
        "index": ("bool", "index deflated members in the background"),
    },
    "pack": {
        "chunk": ("int", "SOZip chunk size (default 1048576)"),
        "compress": ("value", "keep, none, deflate or auto (default keep)"),
        "header": ("list", "for http(s): send a header (repeatable)"),
        "endpoint": ("value", "for s3://: an S3-compatible server"),
        "no_sign_request": ("bool", "for s3://: send unsigned requests"),
        "disk_cache": ("value", "for a URL: keep fetched blocks in DIR too"),
        "disk_cache_mb": ("int", "bound of --disk-cache (default 10240)"),
        "remote_timeout": ("duration", "for a URL: give a request up (default 2m0s)"),
        "stall_timeout": ("duration", "for a URL: retry a silent request (default 20s)"),
    },
    "unmount": {
        "lazy": ("bool", "detach the mount even if files are open in it"),
    },
}
