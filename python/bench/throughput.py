"""memfold's training executor against PyTorch (issue 18): the same model and shapes trained
one step at a time on the CPU with the same number of threads, median step time of each.

memfold runs `memfold train MODEL --strategy none --steps K --json` (every step checked against
an unplanned twin; `step_ms` is the planned step's operator time, the median over the steps).
PyTorch runs eager forward, loss, backward and an SGD-with-momentum update of the same
architecture written here; its step is timed around all four.

Usage (from the repository root, after `make build`):
  build/venv/bin/python python/bench/throughput.py [path/to/memfold]
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

from zoo import ResNet

THREADS = 2
STEPS = 5


class SockeyeNmt(nn.Module):
    """zoo:nmt in PyTorch: a bidirectional first encoder layer (hidden / 2 per direction), then
    unidirectional layers; decoder states from tanh(FC(last encoder state)); input feeding; MLP
    attention over the encoder states; attention hidden tanh(FC([h, context])); logits."""

    def __init__(self, vocab, tvocab, hidden, layers, dropout):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, hidden)
        self.tgt_embed = nn.Embedding(tvocab, hidden)
        self.first = nn.LSTM(hidden, hidden // 2, batch_first=True, bidirectional=True)
        self.rest = nn.ModuleList(nn.LSTM(hidden, hidden, batch_first=True)
                                  for _ in range(layers - 1))
        self.init_h = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.init_c = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.cells = nn.ModuleList(nn.LSTMCell(2 * hidden if l == 0 else hidden, hidden)
                                   for l in range(layers))
        self.source_proj = nn.Linear(hidden, hidden, bias=False)
        self.query_proj = nn.Linear(hidden, hidden, bias=False)
        self.score = nn.Linear(hidden, 1, bias=False)
        self.att_hidden = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, tvocab)
        self.drop = nn.Dropout(dropout)
        self.hidden = hidden

    def forward(self, src, tgt):
        keys, _ = self.first(self.drop(self.src_embed(src)))
        for lstm in self.rest:
            keys, _ = lstm(self.drop(keys))
        last = keys[:, -1]
        state = [(torch.tanh(h(last)), torch.tanh(c(last)))
                 for h, c in zip(self.init_h, self.init_c)]
        source_hidden = self.source_proj(keys)
        words = self.drop(self.tgt_embed(tgt))
        previous = torch.zeros(src.shape[0], self.hidden)
        logits = []
        for t in range(tgt.shape[1]):
            x = torch.cat([words[:, t], previous], 1)
            for layer, cell in enumerate(self.cells):
                state[layer] = cell(self.drop(x) if layer > 0 else x, state[layer])
                x = state[layer][0]
            mixed = torch.tanh(self.query_proj(x).unsqueeze(1) + source_hidden)
            alpha = torch.softmax(self.score(mixed).squeeze(2), dim=1)
            context = torch.bmm(alpha.unsqueeze(1), keys).squeeze(1)
            previous = self.drop(torch.tanh(self.att_hidden(torch.cat([x, context], 1))))
            logits.append(self.out(previous))
        return torch.stack(logits, 1).reshape(-1, logits[0].shape[1])


def nmt_case(batch=64, seq=25, hidden=512, layers=2, vocab=4096, dropout=0.1):
    model = SockeyeNmt(vocab, vocab, hidden, layers, dropout)
    src = torch.randint(0, vocab, (batch, seq))
    tgt = torch.randint(0, vocab, (batch, seq))
    labels = torch.randint(0, vocab, (batch * seq,))
    zoo = (f"zoo:nmt,batch={batch},seq={seq},hidden={hidden},layers={layers},vocab={vocab},"
           f"tvocab={vocab},dropout={dropout}")
    return (f"LSTM encoder-decoder with attention (batch {batch}, seq {seq}, hidden {hidden}, "
            f"{layers} layers, vocab {vocab})", zoo, model, (src, tgt), labels)


def resnet18_case(batch=8, resolution=64, classes=100):
    model = ResNet(18, classes)  # torchvision's architecture, written out
    images = torch.randn(batch, 3, resolution, resolution)
    labels = torch.randint(0, classes, (batch,))
    zoo = f"zoo:resnet,depth=18,res={resolution},batch={batch},classes={classes}"
    return (f"ResNet-18 ({resolution}x{resolution}, batch {batch}, {classes} classes)", zoo,
            model, (images,), labels)


def pytorch_step_ms(model, inputs, labels):
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for _ in range(STEPS + 1):  # the first step warms up
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(*inputs), labels).backward()
        optimizer.step()
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times[1:])


def memfold_step_ms(memfold, zoo):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(THREADS))
    run = subprocess.run([memfold, "train", zoo, "--strategy", "none", "--steps", str(STEPS),
                          "--json"], capture_output=True, text=True, env=env, check=True)
    return json.loads(run.stdout)["step_ms"]


def main():
    memfold = sys.argv[1] if len(sys.argv) > 1 else "build/release/memfold"
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    print(f"| model (training step, CPU, {THREADS} threads) | memfold | PyTorch "
          f"{torch.__version__} | memfold / PyTorch throughput |")
    print("|---|---:|---:|---:|")
    for case in (nmt_case(), resnet18_case()):
        name, zoo, model, inputs, labels = case
        ours = memfold_step_ms(memfold, zoo)
        theirs = pytorch_step_ms(model, inputs, labels)
        print(f"| {name} | {ours:,.0f} ms | {theirs:,.0f} ms | {theirs / ours:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
