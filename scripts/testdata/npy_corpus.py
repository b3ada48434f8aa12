"""The npy test corpus: .npy files with header.json expectations made by numpy.

Called by scripts/gen-testdata.py as npy_corpus.generate(ROOT). Writes into
npy/testdata/:

    good/NAME.npy    files numpy reads (written by np.save, or hand-written
                     the way foreign writers do)
    good/NAME.json   the header.json numpy's own view of the file gives
    bad/NAME.npy     headers numpy refuses (each confirmed here)
    strict/NAME.npy  headers numpy's header reader accepts but npzfs refuses
                     on purpose (each confirmed accepted by numpy here)
    manifest.json    one entry per file: how it was made, and for bad and
                     strict files numpy's verdict
    typestr.json     dtype strings with numpy's verdict on each

Expectations are read off numpy objects (dtype.str, .kind, .itemsize,
.byteorder, .fields, np.datetime_data, the strides of a real array, the file
offset after numpy read the header), never computed by re-implementing the
Go logic. Everything is deterministic.
"""
import io
import json
import math
import os
import re
import shutil
import struct
import sys
import warnings

import numpy as np
from numpy.lib import format as F
from numpy.lib.utils import safe_eval

warnings.simplefilter("ignore")

BIG = 2**30  # max_header_size: numpy's 10,000 default refuses wide records


def read_with_numpy(data):
    """numpy's header reader: (version, shape, fortran, dtype, offset, descr)."""
    f = io.BytesIO(data)
    major, minor = F.read_magic(f)
    shape, fortran, dtype = F._read_array_header(f, (major, minor), max_header_size=BIG)
    offset = f.tell()
    hlen = struct.unpack_from("<H" if major == 1 else "<I", data, 8)[0]
    text = data[offset - hlen:offset].decode("latin1" if major < 3 else "utf8")
    if (major, minor) <= (2, 0):
        text = F._filter_header(text)
    descr = safe_eval(text)["descr"]
    return (major, minor), hlen, shape, fortran, dtype, offset, descr


def jsonify(v):
    if isinstance(v, (list, tuple)):
        return [jsonify(x) for x in v]
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    raise TypeError("cannot jsonify %r" % (v,))


def byte_order(dt):
    bo = dt.byteorder
    if bo == "=":
        return sys.byteorder
    return {"<": "little", ">": "big", "|": "none"}[bo]


def dtype_json(dt):
    out = {"str": dt.str, "kind": dt.kind, "itemsize": dt.itemsize,
           "byte_order": byte_order(dt)}
    if dt.kind in "Mm":
        unit, count = np.datetime_data(dt)
        out["unit"] = unit
        out["unit_count"] = count
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        out["subarray"] = {"shape": list(shape), "dtype": dtype_json(base)}
    if dt.names is not None:
        fields = []
        for name in dt.names:
            entry = dt.fields[name]
            fdt, off = entry[0], entry[1]
            title = entry[2] if len(entry) > 2 else None
            f = {"name": name, "title": jsonify(title), "offset": off}
            if fdt.subdtype is not None:
                f["dtype"] = dtype_json(fdt.subdtype[0])
                f["shape"] = list(fdt.subdtype[1])
            else:
                f["dtype"] = dtype_json(fdt)
            fields.append(f)
        out["fields"] = fields
    return out


def expected_json(data):
    (major, minor), hlen, shape, fortran, dt, offset, descr = read_with_numpy(data)
    count = math.prod(shape)
    if dt.hasobject:
        dlen = len(data) - offset
    else:
        dlen = count * dt.itemsize
    # An array of a subarray dtype grows extra axes, and numpy makes arrays
    # of unsized S0/U0 as S1/U1; a void type of the same itemsize gives the
    # strides of the array the header describes.
    unsized = dt.itemsize == 0 and dt.names is None
    adt = dt if dt.subdtype is None and not unsized else np.dtype((np.void, dt.itemsize))
    strides = np.empty(shape, dtype=adt, order="F" if fortran else "C").strides
    return {
        "version": "%d.%d" % (major, minor),
        "header_length": hlen,
        "data_offset": offset,
        "data_length": dlen,
        "descr": jsonify(descr),
        "fortran_order": fortran,
        "shape": list(shape),
        "count": count,
        "strides": list(strides),
        "dtype": dtype_json(dt),
    }


def npy_bytes(header, version=(1, 0), data=b""):
    """A hand-written .npy: prefix, the header text exactly as given, data."""
    enc = "utf8" if version == (3, 0) else "latin1"
    h = header.encode(enc) if isinstance(header, str) else header
    fmt = "<H" if version == (1, 0) else "<I"
    return F.MAGIC_PREFIX + bytes(version) + struct.pack(fmt, len(h)) + h + data


def saved(arr):
    f = io.BytesIO()
    np.save(f, arr, allow_pickle=True)
    return f.getvalue()


class Corpus:
    def __init__(self, root):
        self.dir = os.path.join(root, "npy", "testdata")
        for sub in ("good", "bad", "strict"):
            shutil.rmtree(os.path.join(self.dir, sub), ignore_errors=True)
            os.makedirs(os.path.join(self.dir, sub))
        self.manifest = {"good": [], "bad": [], "strict": []}

    def write(self, sub, name, data):
        with open(os.path.join(self.dir, sub, name + ".npy"), "wb") as f:
            f.write(data)

    def good(self, name, data, numpy_written):
        exp = expected_json(data)  # raises if numpy refuses it
        self.write("good", name, data)
        # The header numpy writes when it saves an array of this dtype,
        # shape and order (what npy.EncodeHeader(DType.Descr(), ...) makes).
        (_, _), _, shape, fortran, dt, _, _ = read_with_numpy(data)
        f = io.BytesIO()
        F._write_array_header(f, {"descr": F.dtype_to_descr(dt), "fortran_order": fortran, "shape": shape})
        with open(os.path.join(self.dir, "good", name + ".hdr"), "wb") as out:
            out.write(f.getvalue())
        with open(os.path.join(self.dir, "good", name + ".json"), "w", encoding="utf-8") as f:
            json.dump(exp, f, indent=2, ensure_ascii=False)
            f.write("\n")
        self.manifest["good"].append({"name": name, "numpy_written": numpy_written})

    def save(self, name, arr):
        self.good(name, saved(arr), True)

    def hand(self, name, header, version=(1, 0), data=None):
        """A foreign writer's header; data is zeros for the declared size."""
        raw = npy_bytes(header, version)
        if data is None:
            (_, _), _, shape, _, dt, _, _ = read_with_numpy(raw)
            data = bytes(math.prod(shape) * dt.itemsize) if not dt.hasobject else b""
        self.good(name, raw + data, False)

    def bad(self, name, data, why):
        try:
            read_with_numpy(data)
        except Exception as e:  # numpy must refuse it
            msg = str(e).splitlines()[0][:200] if str(e) else ""
            msg = re.sub(r" at 0x[0-9a-f]+", "", msg)  # object addresses vary
            if "is not a dictionary: {" in msg:  # set order varies
                msg = msg[:msg.index("{")] + "a set"
            err = "%s: %s" % (type(e).__name__, msg)
        else:
            raise AssertionError("numpy accepts bad/%s" % name)
        self.write("bad", name, data)
        self.manifest["bad"].append({"name": name, "why": why, "numpy_error": err})

    def strict(self, name, data, why):
        read_with_numpy(data)  # numpy's header reader accepts it
        self.write("strict", name, data)
        self.manifest["strict"].append({"name": name, "why": why})

    def finish(self, typestrs, syntax, rand):
        with open(os.path.join(self.dir, "random_descr.json"), "w", encoding="utf-8") as f:
            json.dump(rand, f, indent=None, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        with open(os.path.join(self.dir, "syntax.json"), "w", encoding="utf-8") as f:
            json.dump(syntax, f, indent=0, ensure_ascii=False)
            f.write("\n")
        with open(os.path.join(self.dir, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump(self.manifest, f, indent=1, ensure_ascii=False)
            f.write("\n")
        with open(os.path.join(self.dir, "typestr.json"), "w", encoding="utf-8") as f:
            json.dump(typestrs, f, indent=0, ensure_ascii=False)
            f.write("\n")


def hdr(descr, shape="()", fortran="False"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


def numpy_written(c):
    # Every dtype family, both byte orders.
    for code in ["b1", "i1", "u1"]:
        c.save("plain_" + code, np.arange(3).astype(code))
    for code in ["i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8", "f16",
                 "c8", "c16", "c32"]:
        for bo, tag in (("<", "le"), (">", "be")):
            a = np.zeros(3, dtype=bo + code)  # zeroed: long double padding stays 0
            if code[0] == "c":  # set the real parts through a float view
                a.view("%sf%d" % (bo, int(code[1:]) // 2))[0::2] = np.arange(3)
            else:
                a[:] = np.arange(3)
            c.save("plain_%s_%s" % (code, tag), a)
    for bo, tag in (("<", "le"), (">", "be")):
        c.save("U3_" + tag, np.array(["ab", "xyz"], dtype=bo + "U3"))
        c.save("M8ns_" + tag, np.array([0, 1], dtype=bo + "M8[ns]"))
        c.save("m8_3h_" + tag, np.array([0, 1], dtype=bo + "m8[3h]"))
    c.save("S5", np.array([b"ab", b"hello"], dtype="S5"))
    c.save("S0", np.zeros(3, dtype="S0"))
    c.save("U0", np.zeros(2, dtype="U0"))
    c.save("V4", np.zeros(2, dtype="V4"))
    c.save("V0", np.zeros(2, dtype="V0"))
    c.save("object", np.array([1, "two", None], dtype=object))
    c.save("object_0d", np.array({"a": 1}, dtype=object))
    # Datetimes: every unit, multipliers, generic.
    for u in "Y M W D h m s ms us ns ps fs as".split():
        c.save("M8_" + u, np.zeros(1, dtype="M8[%s]" % u))
    c.save("M8_10ms", np.zeros(2, dtype="<M8[10ms]"))
    c.save("M8_500ps", np.zeros(2, dtype="M8[ns/2]"))
    c.save("M8_generic", np.zeros(2, dtype="M8"))
    c.save("m8_generic_be", np.zeros(2, dtype=">m8"))
    # Shapes and order.
    c.save("scalar_0d", np.array(3.5))
    c.save("empty_1d", np.zeros(0, dtype="<i4"))
    c.save("empty_3d", np.zeros((2, 0, 3), dtype="<f4"))
    c.save("empty_fortran", np.asfortranarray(np.zeros((2, 0, 3), dtype="<f4")))
    c.save("fortran_2d", np.asfortranarray(np.arange(6, dtype="<i2").reshape(2, 3)))
    c.save("fortran_3d", np.asfortranarray(np.arange(24, dtype=">i4").reshape(2, 3, 4)))
    c.save("size1_dims", np.zeros((1, 3, 1), dtype="<u2"))
    c.save("fortran_size1_dims", np.asfortranarray(np.zeros((3, 1, 2), dtype="<u2")))
    c.save("shape_4d", np.zeros((2, 1, 2, 3), dtype="u1"))
    # Records.
    c.save("record_simple", np.zeros(2, dtype=[("a", "<i4"), ("b", ">f8")]))
    c.save("record_nested", np.zeros(2, dtype=[("a", "<i2"), ("n", [("x", "u1"), ("y", [("z", ">f4")])])]))
    c.save("record_aligned", np.zeros(2, dtype=np.dtype([("a", "u1"), ("b", "<i8"), ("c", "u1")], align=True)))
    c.save("record_titles", np.zeros(2, dtype=[(("Alpha title", "a"), "<i4"), (("t", "b"), "u1")]))
    c.save("record_padded", np.zeros(2, dtype=np.dtype({"names": ["a", "b"], "formats": ["<i2", "<i4"], "offsets": [2, 8], "itemsize": 16})))
    c.save("record_subarray", np.zeros(2, dtype=[("a", "<i4", (2, 3)), ("b", "<f8", (2,)), ("c", "S3", (1,))]))
    c.save("record_subarray_zero", np.zeros(2, dtype=[("a", "<i4", (0,)), ("b", "u1")]))
    c.save("record_subarray_of_record", np.zeros(1, dtype=[("r", [("x", "<i2"), ("y", "u1")], (2,))]))
    c.save("record_with_object", np.array([(1, "x")], dtype=[("a", "<i4"), ("o", "O")]))
    c.save("record_datetime", np.zeros(1, dtype=[("t", "<M8[us]"), ("d", ">m8[7D]")]))
    c.save("record_empty", np.zeros(3, dtype=[]))
    c.save("record_0d", np.zeros((), dtype=[("a", "<i4"), ("b", "S2")]))
    c.save("record_fortran", np.asfortranarray(np.zeros((2, 3), dtype=[("a", "<i4")])))
    c.save("record_unicode_field", np.zeros(1, dtype=[("U", "<U2"), ("B", "b1")]))
    # Field names Python's repr must get right.
    c.save("name_quote", np.zeros(1, dtype=[("it's", "u1")]))
    c.save("name_dquote", np.zeros(1, dtype=[('say "hi"', "u1")]))
    c.save("name_both_quotes", np.zeros(1, dtype=[("a'b\"c", "u1")]))
    c.save("name_backslash_tab", np.zeros(1, dtype=[("back\\slash\ttab\nnl", "u1")]))
    c.save("name_latin1", np.zeros(1, dtype=[("caf\u00e9", "u1"), ("nb\u00a0sp", "u1"), ("del\x7f", "u1"), ("soft\u00adhyphen", "u1")]))
    # Version 3.0: a name outside latin-1 (numpy chooses 3.0 itself).
    c.save("v3_unicode_name", np.zeros(2, dtype=[("\u03b1\u03b2", "<f4"), ("\u20ac", "u1"), ("\U0001f600", "u1"), ("zw\u200bsp", "u1")]))
    # Version 2.0: a record whose header passes 65535 bytes (numpy chooses 2.0).
    wide = np.dtype([("f%03d_" % i + "x" * 400, "u1") for i in range(165)])
    c.save("v2_wide_record", np.zeros(0, dtype=wide))
    # Growth padding edge: big first axis, fortran last axis.
    c.save("big_axis_growth", np.lib.stride_tricks.as_strided(np.zeros(1, "u1"), (1234567,), (0,))[:0])


def hand_written(c):
    # Type strings other writers use, all accepted by numpy.dtype.
    forms = {
        "ts_i2": "'i2'", "ts_eq_i2": "'=i2'", "ts_pipe_i2": "'|i2'", "ts_bool": "'?'",
        "ts_h": "'h'", "ts_int16": "'int16'", "ts_pipe_a5": "'|a5'", "ts_V2": "'<V2'",
        "ts_b1": "'b1'", "ts_float64": "'float64'", "ts_big_f": "'>f'", "ts_S": "'S'",
        "ts_u_prefix": "u'<f8'", "ts_dquote": '"<f8"', "ts_d": "'d'", "ts_g": "'g'",
        "ts_G": "'G'", "ts_e": "'e'", "ts_c": "'c'", "ts_O4": "'O4'", "ts_object": "'object'",
        "ts_str": "'str'", "ts_bytes": "'bytes'", "ts_void": "'void'", "ts_datetime64_ns": "'datetime64[ns]'",
        "ts_timedelta64": "'timedelta64'", "ts_M8_space": "'M8[ 5s]'", "ts_M8_div": "'<M8[Y/5]'",
        "ts_M8_musec": "'<M8[\\u03bcs]'", "ts_m_big": "'>m'", "ts_ushort": "'ushort'",
        "ts_strtol_space": "'i +4'", "ts_S_wrap": "'S4294967297'",
    }
    for name, d in forms.items():
        c.hand(name, hdr(d, "(2,)"))
    # Literal syntax numpy (ast.literal_eval) accepts.
    c.hand("syn_no_padding", "{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}")
    c.hand("syn_key_order", "{'shape': (2, 2), 'fortran_order': True, 'descr': '>u2'}\n")
    c.hand("syn_repeated_key", "{'descr': '<i4', 'shape': (7,), 'fortran_order': False, 'shape': (2,)}\n")
    c.hand("syn_whitespace", " {\n 'descr' :'<i4' ,\n\t'fortran_order':False,'shape':( 2 , 3 , ) ,\n}  # a comment\n\f\n")
    c.hand("syn_long_suffix", "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3 L), }\n")
    c.hand("syn_long_suffix_v2", "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }\n", (2, 0))
    c.hand("syn_int_forms", "{'descr': '<i4', 'fortran_order': False, 'shape': (0x2, 0o1, 0b1, 1_0, 00, +1), }\n")
    c.hand("syn_concat_raw", "{'descr': '<' r'f' \"8\", 'fortran_order': False, 'shape': (2,), }\n")
    c.hand("syn_triple_quote", "{'descr': '''<f8''', 'fortran_order': False, 'shape': (1,), }\n")
    c.hand("syn_escapes", hdr("[('\\x41\\101\\u0042\\U00000043\\'\\\"\\\\\\n\\t\\d', '<i4')]", "(1,)"))
    c.hand("syn_paren_value", "{'descr': ('<i4'), 'fortran_order': (False), 'shape': ((2),), }\n")
    c.hand("syn_continuation", "{'descr': '<i4', \\\n'fortran_order': False, 'shape': (2,), }\n")
    c.hand("syn_crlf", "\r\n{'descr': '<i4',\r\n 'fortran_order': False, 'shape': (2,), }\r\n")
    c.hand("syn_v3_utf8", "{'descr': [('\u00e9t\u00e9', '<i4')], 'fortran_order': False, 'shape': (1,), }\n", (3, 0))
    c.hand("syn_latin1_bytes", "{'descr': [('\u00ff\u00e9', '<i4')], 'fortran_order': False, 'shape': (1,), }\n")
    # descr forms numpy's descr_to_dtype accepts.
    c.hand("descr_list_fields", hdr("[['a', '<i4'], ['b', '<f4', 2]]", "(1,)"))
    c.hand("descr_bare_int_shape", hdr("[('a', '<i4', 3)]", "(1,)"))
    c.hand("descr_list_shape", hdr("[('a', '<i4', [2, 1])]", "(1,)"))
    c.hand("descr_shape_one", hdr("[('a', '<i4', 1), ('b', '<i4', (1,))]", "(1,)"))
    c.hand("descr_toplevel_subarray", hdr("('<i4', (2,))", "(3,)"))
    c.hand("descr_toplevel_subarray_int", hdr("('<f8', 3)", "(2,)"))
    c.hand("descr_subarray_of_subarray", hdr("[('a', ('<i4', (2,)), (3,))]", "(1,)"))
    c.hand("descr_flexible_itemsize", hdr("[('a', 'S0', 5), ('b', ('U0', 3)), ('c', ('|V0', 2))]", "(1,)"))
    c.hand("descr_padding", hdr("[('', '|V4'), ('a', '<i4'), ('', '|V2'), ('', '<i2', 2)]", "(1,)"))
    c.hand("descr_empty_name_kept", hdr("[('', '<i4'), ('b', 'u1')]", "(1,)"))
    c.hand("descr_title_int", hdr("[((1, 'a'), '<i4'), ((('x', 2), 'b'), 'u1')]", "(1,)"))
    c.hand("descr_empty_title", hdr("[(('', 'a'), '<i4')]", "(1,)"))
    c.hand("descr_comma_string", hdr("'i4, >f8,(2,3)u1,S3'", "(2,)"))
    c.hand("descr_shape_prefix", hdr("'(2,3)<i4'", "(1,)"))
    c.hand("descr_repeat_prefix", hdr("'>2f4'", "(1,)"))
    c.hand("descr_sized_empty_subarray", hdr("[('a', ('<f8', (0, 2)), 2), ('b', 'u1')]", "(2,)"))
    c.hand("descr_none_title", hdr("[((None, 'a'), '<i4'), (('t', 'b'), 'u1')]", "(1,)"))
    c.hand("descr_two_char_field", hdr("['ab']", "(1,)"))
    c.hand("descr_type_tuple_extra", hdr("('<i4', 2, 'ignored')", "(1,)"))
    c.hand("descr_unit_tuple", hdr("('<i4', ())", "(1,)"))
    c.hand("descr_datetime_neg", hdr("'<M8[s/-2]'", "(1,)"))
    c.hand("descr_datetime_zero", hdr("'<m8[0s]'", "(1,)"))
    c.hand("descr_datetime_week_quirk", hdr("'<M8[W/1000]'", "(1,)"))
    c.hand("descr_generic_count", hdr("'<M8[2generic]'", "(1,)"))
    c.hand("descr_nested_list_record", hdr("[('a', [('b', [('c', [('d', '>i8')])])])]", "(1,)"))
    c.hand("shape_zero_big", hdr("'u1'", "(0, %d)" % 2**62), data=b"")
    c.hand("shape_32_dims", hdr("'u1'", "(" + "1, " * 32 + ")"))


def rejected(c):
    good_hdr = hdr("'<i4'", "(1,)")
    c.bad("magic", b"\x93NUMPX\x01\x00" + npy_bytes(good_hdr)[8:], "bad magic")
    c.bad("short_magic", b"\x93NUM", "stream shorter than the magic")
    c.bad("version_4", npy_bytes(good_hdr, (2, 0))[:6] + b"\x04\x00" + npy_bytes(good_hdr, (2, 0))[8:], "version 4.0")
    c.bad("version_1_1", npy_bytes(good_hdr)[:6] + b"\x01\x01" + npy_bytes(good_hdr)[8:], "version 1.1")
    c.bad("truncated_length", npy_bytes(good_hdr)[:9], "header length field cut short")
    c.bad("truncated_header", npy_bytes(good_hdr)[:30], "header cut short")
    c.bad("huge_length", F.MAGIC_PREFIX + b"\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{}", "4 GiB header claimed in a tiny file")
    cases = {
        "missing_key": "{'descr': '<i4', 'shape': (1,)}",
        "extra_key": "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
        "not_dict": "[('descr', '<i4')]",
        "set_literal": "{'descr', 'fortran_order', 'shape'}",
        "shape_list": hdr("'<i4'", "[1]"),
        "shape_int": hdr("'<i4'", "(3)"),
        "shape_float": hdr("'<i4'", "(1.0,)"),
        "shape_expr": hdr("'<i4'", "(1+1,)"),
        "shape_name": hdr("'<i4'", "(n,)"),
        "fortran_int": hdr("'<i4'", "(1,)", "0"),
        "fortran_none": hdr("'<i4'", "(1,)", "None"),
        "descr_i5": hdr("'<i5'"),
        "descr_f12": hdr("'f12'"),
        "descr_endian_name": hdr("'<int16'"),
        "descr_endian_only": hdr("'<'"),
        "descr_empty": hdr("''"),
        "descr_M8_B": hdr("'M8[B]'"),
        "descr_M8_bad_divisor": hdr("'M8[3s/3]'"),
        "descr_M8_neg": hdr("'M8[-5s]'"),
        "descr_M8_trailing": hdr("'M8[us]x'"),
        "descr_int": hdr("4"),
        "descr_bytes": hdr("b'<i4'"),
        "descr_dup_name": hdr("[('a', '<i4'), ('a', '<f4')]"),
        "descr_title_is_name": hdr("[(('a', 'a'), '<i4')]"),
        "descr_title_clash": hdr("[(('x', 'a'), '<i4'), (('x', 'b'), '<i4')]"),
        "descr_name_int": hdr("[(1, '<i4')]"),
        "descr_field_4_items": hdr("[('a', '<i4', (2,), 1)]"),
        "descr_field_1_item": hdr("[('a',)]"),
        "descr_sub_neg": hdr("[('a', '<i4', (2, -1))]"),
        "descr_sub_bool": hdr("[('a', '<i4', True)]"),
        "descr_sub_33_dims": hdr("[('a', 'u1', (" + "1, " * 33 + "))]"),
        "descr_sub_too_big": hdr("[('a', '<i4', (536870912,))]"),
        "descr_record_too_big": hdr("[('a', 'S2147483647'), ('b', 'S1')]"),
        "descr_tuple_short": hdr("('<i4',)"),
        "descr_flexible_tuple_shape": hdr("('S0', (5,))"),
        "descr_deep_5000": hdr("[('a', " * 5000 + "'<i4'" + ")]" * 5000),
        "nul_byte": "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}\x00",
        "leading_zero_int": hdr("'<i4'", "(03,)"),
        "unterminated_string": "{'descr': '<i4, 'fortran_order': False, 'shape': (1,)}",
        "double_comma": "{'descr': '<i4', 'fortran_order': False, 'shape': (1,),,}",
        "trailing_junk": "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)};",
        "vertical_tab": "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}\x0b",
        "indented_second_line": "\n {'descr': '<i4', 'fortran_order': False, 'shape': (1,)}",
        "continuation_at_end": "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}\\\n",
        "lowercase_l": hdr("'<i4'", "(1l,)"),
        "call": hdr("dtype('<i4')"),
        "empty_header": "",
    }
    for name, text in cases.items():
        c.bad(name, npy_bytes(text), name.replace("_", " "))
    c.bad("v3_long_suffix", npy_bytes(hdr("'<i4'", "(1L,)"), (3, 0)), "Python 2 L suffix in a 3.0 header")
    c.bad("v3_invalid_utf8", npy_bytes(b"{'descr': [('\xff', '<i4')], 'fortran_order': False, 'shape': (1,)}", (3, 0)), "invalid UTF-8 in a 3.0 header")
    c.bad("v1_non_ascii_outside_string", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}\u00a0"), "no-break space is not Python whitespace")


def stricter(c):
    c.strict("shape_negative", npy_bytes(hdr("'<i4'", "(-1,)")), "negative dimension")
    c.strict("shape_bool", npy_bytes(hdr("'<i4'", "(True,)")), "bool dimension")
    c.strict("shape_huge_int", npy_bytes(hdr("'<i4'", "(%d,)" % 2**64)), "dimension beyond int64")
    c.strict("shape_overflow", npy_bytes(hdr("'<f8'", "(%d, %d)" % (2**40, 2**40))), "count*itemsize overflows int64")
    c.strict("shape_zero_extent_overflow", npy_bytes(hdr("'<f8'", "(0, %d)" % (2**63 - 1))), "numpy refuses to make the array: too big")
    c.strict("shape_33_dims", npy_bytes(hdr("'u1'", "(" + "1, " * 33 + ")")), "numpy arrays have at most 32 dimensions")
    c.strict("descr_union", npy_bytes(hdr("('<i4', [('a', '<i2'), ('b', '<i2')])")), "(base, dtype) union form")
    c.strict("descr_surrogate", npy_bytes(hdr("[('\\ud800', '<i4')]")), "lone surrogate in a name")
    c.strict("descr_nested_100", npy_bytes(hdr("[('a', " * 70 + "'<i4'" + ")]" * 70)), "nesting deeper than 64")
    c.strict("descr_named_escape", npy_bytes(hdr("[('\\N{BULLET}', '<i4')]")), "\\N{...} escape")
    c.strict("descr_S_neg", npy_bytes(hdr("'S-1'")), "negative itemsize")
    c.strict("descr_S_wrap_negative", npy_bytes(hdr("'S2147483648'")), "itemsize wraps negative in numpy")


def typestrs():
    """dtype strings with numpy's verdict: [string, dtype json or null]."""
    cands = []
    for i in range(32, 127):
        cands.append(chr(i))
    for bo in "<>|=":
        for ch in "?bBhHiIlLqQpPefdgFDGSaUVOMmcn":
            cands.append(bo + ch)
    for k in "biufcMmSaUVOe?x":
        for n in list(range(0, 18)) + [32, 64, 255, 256]:
            cands.append("%s%d" % (k, n))
            cands.append("<%s%d" % (k, n))
            cands.append(">%s%d" % (k, n))
            cands.append("|%s%d" % (k, n))
    names = sorted(k for k in np.sctypeDict if isinstance(k, str))
    for n in names + ["Bytes0", "Str0", "Uint32", "int128", "float96", "complex512"]:
        cands.append(n)
        cands.append("<" + n)
        cands.append("=" + n)
    for u in "Y M W D h m s ms us ns ps fs as generic B x".split():
        for pre in ("M8", "m8", "datetime64", "timedelta64", "<M8", ">m8", "|M8"):
            cands.append("%s[%s]" % (pre, u))
            cands.append("%s[7%s]" % (pre, u))
    for s in ["M8[5s/2]", "M8[ns/3]", "M8[Y/12]", "M8[M/30]", "M8[D/1440]", "m8[h/3600]", "m8[m/60000]",
              "M8[as/2]", "M8[fs/1000]", "M8[fs/1000000]", "M8[2147483647s]", "M8[2147483648s]", "M8[ s]",
              "M8[+3s]", "M8[3 s]", "M8[3s/ 2]", "M8[3s/2 ]", "M8[s/+2]", "M8[]", "M8[s", "M8[s]]",
              "M8[1000000000Y/2]", "i 4", "i\t4", "i+4", "i-4", "i04", "i4 ", " i4", "S 5", "U+2", "V-0",
              "S2147483647", "U536870911", "U536870912", "U1073741824", "i99999999999999999999",
              "f8x", "M8x", "M16", "M4", "datetime64x", "int16 ", "f\x008", "",
              "M08", "m+8", "M 8", "O08", "M8 ", "b01", "f+4", ">M08", "M8[ns] ", "m8[]", "c+16",
              "V+3", "U 2", "a+0", "S\t3", "M8[2generic]", "M8[generic/2]", "M8[ns/0x2]", "M8[\u03bcs/2]",
              ">()U3", "<()i4", "()i4", "|()i4", "(2)i4", "<1i4", "0|V0", "1i4", ">2i4",
              "i4,f8", "i4, f8", "i4 ,f8", "i4,", ",i4", "i4,,f8", "i4,f8 ", "i4 , f8 ,", " i4,f8",
              "2i4,3f8", "(2,3)i4,S5", "(2,3)i4", "2,3i4", "(2),i4", "<i4,>f8", "<>i4,f8", "|<i4,f8",
              "=<i4,f8", "<=i4,f8", ">=i4,f8", "<2>i4,f8", "<2<i4,f8", "2 i4,f8", " 2i4,f8", "02i4,f8",
              "0i4,f8", "1i4,f8", "(1,)i4,f8", "()i4,f8", "(,)i4,f8", "i4,M8[ns]", "i4,M8[ns/2]",
              "i4,O", "i4,U3,V2", "i4,int16", "i4,<int16", "i4,f8\n", "i4,\tf8", "i4,\x0bf8",
              "i4\u2003,f8", "a,b,c", "?,b1", "i4,(2)f8", "i4,2(3)f8", "i4,(2,(3))f8", "S0,U0,V0",
              "(2,3,)i4,f8", "( 2 , 3 )i4,f8", "i4,f8.", "i4,[ns]", "M8[ns],m8[3h]", "i4,M8[1,2]",
              "<0i4", "0", "1", "2", "(2)", "(2,)", ",", ",,", "i4,i4,i4,i4,i4,i4,i4,i4,i4,i4,i4",
              "2>3i4", "<=2i4", "O,O", "(2147483647,)i4,f8", "(536870912,)i4,f8", "S2147483647,S1",
              "f8,<", "f8,>", "f8,=", "f8,|", "i4,f8,<", "4 |0S4", "3|0?", "0i4,", "i4,,"]:
        cands.append(s)
    seen = set()
    out = []
    for s in cands:
        if s in seen:
            continue
        seen.add(s)
        try:
            dt = np.dtype(s)
        except Exception:
            out.append([s, None])
            continue
        if dt.itemsize < 0:
            out.append([s, "negative"])
            continue
        out.append([s, dtype_json(dt)])
    return out


def syntax_cases():
    """Header texts varied over Python literal syntax, with numpy's verdict:
    [version, text, null, "strict" or {descr, fortran_order, shape}]."""
    texts = []
    base = "{'descr': %s, 'fortran_order': %s, 'shape': %s}"
    for shape in ["()", "(1,)", "(1 ,)", "( 1, 2 )", "(1,2,)", "(1,,)", "(,)", "(1)", "((1),)", "(((1,)))",
                  "(0,)", "(00,)", "(0_0,)", "(1__0,)", "(1_,)", "(0x_1,)", "(0X1F,)", "(0B1,)", "(0O7,)",
                  "(0b2,)", "(0o8,)", "(0xg,)", "(1e3,)", "(1E3,)", "(1.,)", "(.5,)", "(1j,)", "(1L,)",
                  "(0L,)", "(0xFFL,)", "(1 L,)", "(1\tL,)", "(1L ,)", "(1LL,)", "(1Lx,)", "(-0,)", "(- 1,)",
                  "(+-1,)", "(--1,)", "(~1,)", "(+ 1,)", "(1 if 1 else 2,)", "(True,)", "(None,)", "(1,)\n",
                  "(9223372036854775807,)", "(0x7fffffffffffffff,)", "(0b" + "1" * 63 + ",)",
                  "(01,)", "(0_1,)", "(1_000_000,)", "(0o_7,)", "(0b_1,)", "(1\n,)", "(1\\\n,)"]:
        texts.append(base % ("'<i4'", "False", shape))
    for fo in ["True", "False", "true", "TRUE", "(True)", "1", "0", "True_", "Truex", "not False"]:
        texts.append(base % ("'<i4'", fo, "()"))
    for name in ["'a'", '"a"', "u'a'", "U'a'", "r'a'", "R'a'", "ur'a'", "b'a'", "f'a'", "'a' 'b'", "'a' u'b'",
                 "'a''b'", "'''a'''", '"""a"""', "'''a\nb'''", "'''a\r\nb'''", "'\\x41'", "'\\101'", "'\\1'",
                 "'\\0'", "'\\08'", "'\\777'", "'\\x4'", "'\\x4g'", "'\\u0041'", "'\\u004'", "'\\U00000041'",
                 "'\\U0010FFFF'", "'\\d'", "'\\q'", "'\\ '", "'\\\\'", "'\\''", "'\\\"'", "'\\a\\b\\f\\v\\r'",
                 "r'\\''", "r'\\'", "'a\\\nb'", "'a\\\r\nb'", "'\u00e9'", "'\u00ff'", "'\t'", "'a\rb'",
                 "r'\\x41'", "'#'", "'a' # c\n 'b'", "('a')", "'a' \\\n 'b'", "'''a''''b'", "''", "''''''",
                 "'\"'", "\"'\"", "'''a'b'''", "r'a\\\nb'", "'\\N{BULLET}'", "'\\ud800'", "'\\U00110000'"]:
        texts.append(base % ("[(%s, '<i4')]" % name, "False", "()"))
    lead = ["", " ", "\t", "\n", "\r", "\r\n", "\f", "\v", "#c\n", " \n", "\n ", "\n\t", "\f ",
            " #c\n", "\\\n", "\n\n", "\f\n ", "\xa0", "\x01", "\n\f{", "\n#c\n"]
    trail = ["", " ", "\n", "\r", "\t\n", "#c", "# c\n\n", "\n#c", "\f", "\v", "\\\n", " \\\n#c\n",
             "\n ", "\n \n", "\n1", ",", ";", " ;", "\x00", "\xa0", "\n\f", "\\\n ", "\\\n1"]
    mid = base % ("'<i4'", "False", "()")
    mid = base % ("'<i4'", "False", "()")
    # Carriage returns, form feeds and continuations around the literal.
    for t in ["\r", "\rM", " \rM", "\r M", "#c\rM", "M\r", "M\r ", "M\n ", "M\n\t", "M\n \n",
              "M\r\n ", "M \n ", "M\n  #c", "M\n\f", "M\n \f", "\f M", "\fM", " \fM", "\f\tM",
              "\f\n M", "M\\\n", "M\\\n ", "M\\\n#c", "M\\\n\n", "M \\\n", "\\\nM", " \\\nM",
              "\\\n M", "\n\\\nM", "M\n\\\n", "M\r#c", "M \r", "M\r\n\r", "M\r\r", "#c\r\rM",
              "\r\rM", "#c\r M", "#c\r\nM", "M#c\r", "M#c\r ", "M#c\r#d", "\n\rM", "M\n\r", "M\r\r\n",
              "M\n\r\n", "\r\n\rM", "\t\rM", "\f\rM", "#c\r#d\rM", "M\r\f", "M\r\t", "M\r#c\n",
              "M\n#c\r", "M\n#c\r ", "M\r \n", "\\\r\nM", "\\\rM", "M\\\r", "M\\\r ", "M\\\r\n",
              "M\n\r ", "M\n \r", "\r\n M", "M\t\n\t\n", "M\n\t#c", "M\n\f ", "M\r\f\n"]:
        texts.append(t.replace("M", mid))
    for l in lead:
        texts.append(l + mid)
    for t in trail:
        texts.append(mid + t)
    for sep in [",", " ,", ",\n", "\n,", ", #c\n", ",\\\n", ",,", ",\r"]:
        texts.append("{'descr': '<i4'" + sep + "'fortran_order': False, 'shape': ()}")
    texts += [
        "{'descr':'<i4','fortran_order':False,'shape':(),}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (), **{}}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': () , }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (), 'descr': '>f8'}",
        "{u'descr': '<i4', 'fortran_order': False, 'shape': ()}",
        "{'desc' 'r': '<i4', 'fortran_order': False, 'shape': ()}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (), 1: 2, True: 3}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (), (1,): 2}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (), [1]: 2}",
        "{'descr': '<i4', 'fortran_order': False}",
        "dict(descr='<i4', fortran_order=False, shape=())",
        "({'descr': '<i4', 'fortran_order': False, 'shape': ()})",
        "{'descr': '<i4', 'fortran_order': False, 'shape': ()}\n{}",
        "{}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': ()} {}",
    ]
    out = []
    for text in texts:
        for version in [(1, 0), (3, 0)]:
            try:
                raw = npy_bytes(text, version)
            except UnicodeEncodeError:
                continue
            try:
                (_, _), _, shape, fortran, dt, _, descr = read_with_numpy(raw)
                verdict = {"descr": jsonify(descr), "fortran_order": fortran, "shape": list(shape)}
                if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in shape):
                    verdict = "strict"
                elif math.prod(n for n in shape if n) * max(dt.itemsize, 1) >= 2**63:
                    verdict = "strict"  # numpy cannot make the array either
                else:
                    try:
                        json.dumps(verdict, ensure_ascii=False).encode("utf-8")
                    except UnicodeEncodeError:  # a lone surrogate
                        verdict = "strict"
            except Exception:
                verdict = None
            out.append(["%d.%d" % version, text, verdict])
    return out


def random_descr_cases(n, seed):
    """Random descr/shape/order headers with numpy's full header.json (or
    null when numpy refuses): a differential test of the dtype model."""
    import random
    rnd = random.Random(seed)
    strs = ["<i4", "|u1", ">f8", "<M8[ns]", "m8[3h]", "S3", "U2", "|V4", "V0", "S0", "O", "?", "b1", "<c8",
            "f2", ">u2", "i8", "|V2", "int16", "float32", "M8", "<U0", "c32", "g", "e", "a2", "x4", "<i5", "",
            "M8[ns/4]", "bool", "O4", "V", ">m8[7D]", "datetime64[us]", "i4,f8", "2i4", "(2,0)f8",
            "<i4,>u2,", "(0,)S2"]
    names = ["a", "b", "c", "", "A", "t", "\u00e9", "a'b", 'q"', "x y", "\u03b1"]

    def rshape():
        r = rnd.random()
        if r < 0.3:
            return rnd.randint(-1, 4)
        if r < 0.6:
            return tuple(rnd.randint(0, 3) for _ in range(rnd.randint(0, 3)))
        if r < 0.7:
            return [rnd.randint(0, 3) for _ in range(rnd.randint(0, 2))]
        if r < 0.75:
            return True
        return (rnd.randint(1, 3),)

    def rdescr(d):
        r = rnd.random()
        if d > 3 or r < 0.45:
            return rnd.choice(strs)
        if r < 0.6:
            return (rdescr(d + 1), rshape()) if rnd.random() < 0.9 else (rdescr(d + 1),)
        fields = []
        for _ in range(rnd.randint(0, 4)):
            nm = rnd.choice(names)
            if rnd.random() < 0.15:
                nm = (rnd.choice(names + [1]), nm)
            f = [nm, rdescr(d + 1)]
            if rnd.random() < 0.25:
                f.append(rshape())
            fields.append(tuple(f) if rnd.random() < 0.85 else list(f))
        return fields

    out = []
    for _ in range(n):
        descr = rdescr(0)
        shape = tuple(rnd.randint(0, 2) for _ in range(rnd.randint(0, 2)))
        fortran = rnd.random() < 0.3
        text = "{'descr': %r, 'fortran_order': %r, 'shape': %r, }" % (descr, fortran, shape)
        version = (1, 0)
        try:
            raw = npy_bytes(text, version)
        except UnicodeEncodeError:
            version = (3, 0)
            raw = npy_bytes(text, version)
        try:
            (_, _), _, shp, fo, dt, _, _ = read_with_numpy(raw)
            raw += b"pickle" if dt.hasobject else bytes(math.prod(shp) * dt.itemsize)
            verdict = expected_json(raw)
        except Exception:
            verdict = None
        out.append(["%d.%d" % version, text, verdict])
    return out


def generate(root):
    c = Corpus(root)
    numpy_written(c)
    hand_written(c)
    rejected(c)
    stricter(c)
    c.finish(typestrs(), syntax_cases(), random_descr_cases(1500, 2026))
