"""The independent oracle of Neuron's ONNX export: ONNX's own checker, and ONNX Runtime running the
exported model, compared with what the engine computed.

    check_onnx.py cases MANIFEST.json
        Each case of the manifest (written by Tests/NeuronExportTests) names a model, a file of raw
        input rows and a file of the engine's outputs for them (little-endian float32 or float64).
    check_onnx.py predict MODEL.onnx INPUT.csv PREDICTIONS.csv
        Runs the model on the CSV's rows (columns chosen by the model's neuron.feature_names) and
        compares with `neuron predict`'s CSV for the same rows: the class of every row and each
        probability, or each value.
    check_onnx.py text MANIFEST.json
        Each case of the manifest names a text model, a file of token indices (little-endian int64,
        batch × time) and a file of the engine's next-token probabilities for them (batch × time ×
        vocabulary, float32 or float64); ONNX Runtime's `probabilities` output is compared with them
        (where it cannot run the model, ONNX's reference evaluator's), and the model's metadata
        (vocabulary, boundary token, block) is reported.
    check_onnx.py tokenizer MODEL.onnx TEXT
        Reads the tokenizer a token model carries in its metadata (neuron.tokenizer, Hugging Face's
        tokenizer.json) with Hugging Face's `tokenizers`, and prints the text file's ids as JSON.
    check_onnx.py idx-csv IMAGES.gz MODEL.onnx ROWS OUT.csv
        Writes the first ROWS images of an IDX file as a CSV whose header is the model's feature names.

Each case prints one JSON line: the checker's verdict, whether ONNX Runtime ran it (and why not), the
largest absolute and relative differences, and how many rows' classes agree. The Swift tests judge
the figures; this script exits non-zero only when it cannot read its arguments.
"""

import csv
import gzip
import json
import sys

import numpy as np
import onnx
import onnxruntime as ort


def metadata(model):
    return {p.key: p.value for p in model.metadata_props}


def check(path):
    """The checker's verdict on the file (full check: types and shapes inferred through the graph)."""
    model = onnx.load(path)
    try:
        onnx.checker.check_model(model, full_check=True)
        return model, "ok"
    except Exception as error:  # the checker's message is the finding
        return model, f"{type(error).__name__}: {error}"


def run(path, x):
    """ONNX Runtime's outputs for x, or the reason it cannot run the model (an operator it lacks in float64)."""
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as error:
        return None, str(error).splitlines()[0][:300]
    name = session.get_inputs()[0].name
    try:
        return session.run(None, {name: x})[0], None
    except Exception as error:
        return None, str(error).splitlines()[0][:300]


def compare(expected, found):
    """The largest absolute and relative differences; 1e308 for outputs of another shape (JSON has no infinity)."""
    if expected.shape != found.shape:
        return 1e308, 1e308
    difference = np.abs(expected.astype(np.float64) - found.astype(np.float64))
    scale = np.maximum(np.abs(expected.astype(np.float64)), 1e-30)
    absolute, relative = float(difference.max(initial=0)), float((difference / scale).max(initial=0))
    finite = lambda v: v if np.isfinite(v) else 1e308  # NaN where one side is NaN
    return finite(absolute), finite(relative)


def cases(manifest_path):
    with open(manifest_path) as f:
        manifest = json.load(f)
    for case in manifest:
        dtype = np.float32 if case["precision"] == "float" else np.float64
        model, verdict = check(case["model"])
        x = np.fromfile(case["input"], dtype=dtype).reshape(case["rows"], case["features"])
        expected = np.fromfile(case["expected"], dtype=dtype).reshape(case["rows"], case["outputs"])
        result = {"name": case["name"], "checker": verdict, "opset": model.opset_import[0].version}
        y, reason = run(case["model"], x)
        if y is None:
            result.update(ran=False, reason=reason)
        else:
            absolute, relative = compare(expected, y)
            result.update(
                ran=True, shape=list(y.shape), dtype=str(y.dtype), maxAbsDiff=absolute, maxRelDiff=relative,
                classesAgree=int((expected.argmax(axis=1) == y.argmax(axis=1)).sum()), rows=int(y.shape[0]))
        print(json.dumps(result), flush=True)


def text(manifest_path):
    with open(manifest_path) as f:
        manifest = json.load(f)
    for case in manifest:
        dtype = np.float32 if case["precision"] == "float" else np.float64
        model, verdict = check(case["model"])
        meta = metadata(model)
        batch, time, vocabulary = case["batch"], case["time"], case["vocabulary"]
        tokens = np.fromfile(case["tokens"], dtype="<i8").reshape(batch, time)
        expected = np.fromfile(case["expected"], dtype=dtype).reshape(batch, time, vocabulary)
        result = {
            "name": case["name"], "checker": verdict, "opset": model.opset_import[0].version,
            "vocabulary": json.loads(meta.get("neuron.vocabulary", "[]")), "boundary": meta.get("neuron.boundary_token"),
            "block": int(meta.get("neuron.block_size", "0")),
        }
        try:
            session = ort.InferenceSession(case["model"], providers=["CPUExecutionProvider"])
            y = session.run(["probabilities"], {"tokens": tokens})[0]
        except Exception as error:
            # ONNX Runtime lacks some float64 kernels (RNN, GRU): ONNX's own reference evaluator, a
            # second implementation of the operators' definitions, runs the model instead.
            result.update(ran=False, reason=str(error).splitlines()[0][:300])
            try:
                from onnx.reference import ReferenceEvaluator

                y = ReferenceEvaluator(case["model"]).run(["probabilities"], {"tokens": tokens})[0]
                result.update(referenceMaxAbsDiff=compare(expected, y)[0])
            except Exception as reference_error:
                result.update(referenceReason=str(reference_error).splitlines()[0][:300])
            print(json.dumps(result), flush=True)
            continue
        absolute, relative = compare(expected, y)
        result.update(ran=True, shape=list(y.shape), dtype=str(y.dtype), maxAbsDiff=absolute, maxRelDiff=relative)
        print(json.dumps(result), flush=True)


def tokenizer(model_path, text_path):
    from tokenizers import Tokenizer

    meta = metadata(onnx.load(model_path))
    with open(text_path, encoding="utf-8") as f:
        text = f.read()
    ids = Tokenizer.from_str(meta["neuron.tokenizer"]).encode(text).ids
    print(json.dumps({"format": meta.get("neuron.tokenizer_format"), "block": int(meta["neuron.block_size"]), "ids": ids}))


def predict(model_path, input_path, predictions_path):
    model, verdict = check(model_path)
    meta = metadata(model)
    names = json.loads(meta["neuron.feature_names"])
    classes = json.loads(meta["neuron.class_names"]) if "neuron.class_names" in meta else None
    elem = model.graph.input[0].type.tensor_type.elem_type
    dtype = np.float64 if elem == onnx.TensorProto.DOUBLE else np.float32
    with open(input_path, newline="") as f:
        rows = list(csv.DictReader(f))
    x = np.array([[float(row[n]) for n in names] for row in rows], dtype=dtype)
    with open(predictions_path, newline="") as f:
        predicted = list(csv.reader(f))
    header, body = predicted[0], predicted[1:]
    first = 2 if classes is not None else 1
    expected = np.array([[float(v) for v in row[first:]] for row in body], dtype=np.float64)
    result = {"name": model_path, "checker": verdict, "rows": len(rows), "dtype": str(np.dtype(dtype))}
    y, reason = run(model_path, x)
    if y is None:
        result.update(ran=False, reason=reason)
    else:
        absolute, relative = compare(expected, y)
        result.update(ran=True, maxAbsDiff=absolute, maxRelDiff=relative, shape=list(y.shape), header=header)
        if classes is not None:
            agree = sum(classes[int(k)] == row[1] for k, row in zip(y.argmax(axis=1), body))
            result.update(classesAgree=int(agree))
    print(json.dumps(result), flush=True)


def idx_csv(images_path, model_path, count, out_path):
    names = json.loads(metadata(onnx.load(model_path))["neuron.feature_names"])
    with gzip.open(images_path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x00\x00\x08\x03":
        raise SystemExit(f"{images_path}: not an IDX file of unsigned bytes in 3 dimensions")
    n, h, w = (int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(3))
    pixels = np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, h * w)[:count]
    if len(names) != h * w:
        raise SystemExit(f"{model_path} takes {len(names)} features; {images_path} has {h}×{w} pixels")
    with open(out_path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(names)
        out.writerows(pixels.tolist())


if __name__ == "__main__":
    command, arguments = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "cases" and len(arguments) == 1:
        cases(*arguments)
    elif command == "text" and len(arguments) == 1:
        text(*arguments)
    elif command == "tokenizer" and len(arguments) == 2:
        tokenizer(*arguments)
    elif command == "predict" and len(arguments) == 3:
        predict(*arguments)
    elif command == "idx-csv" and len(arguments) == 4:
        idx_csv(arguments[0], arguments[1], int(arguments[2]), arguments[3])
    else:
        raise SystemExit(__doc__)
