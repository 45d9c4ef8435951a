"""A user-style zoo: small PyTorch models written the way tutorials and papers write them, not
the way memfold would like them (nn.ReLU() without inplace, F.relu, -inf masks, GRUs, explicit
pads, GroupNorm, InstanceNorm, losses inside forward, ...). The partitioner is tested on every
one (python/tests/test_zoo.py) and measured on them (`make torch-bench`).

ZOO maps a name to a factory returning (model, inputs, blocks): `inputs` a tuple for
model(*inputs), `blocks` the submodules torch.utils.checkpoint may wrap one by one. Sizes train
in well under a second on a CPU, so that every test traces each model a few times.
"""

import math

import torch
from torch import nn
import torch.nn.functional as F


def _seeded(factory):
    def build():
        torch.manual_seed(0)
        return factory()
    build.__name__ = factory.__name__
    build.__doc__ = factory.__doc__
    return build


# ---- convolutional networks -------------------------------------------------------------------


class BasicBlock(nn.Module):
    """A ResNet basic block with a non-inplace nn.ReLU(), as most tutorials write it."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNetCifar(nn.Module):
    def __init__(self, widths=(16, 32, 64), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU())
        layers, cin = [], widths[0]
        for k, w in enumerate(widths):
            layers += [BasicBlock(cin, w, 1 if k == 0 else 2), BasicBlock(w, w)]
            cin = w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@_seeded
def resnet_cifar():
    """ResNet-14 for 32x32 images, nn.ReLU() without inplace."""
    model = ResNetCifar()
    return model, (torch.randn(8, 3, 32, 32),), list(model.layers)


class Bottleneck(nn.Module):
    """A ResNet-50 style bottleneck written with F.relu."""

    def __init__(self, cin, mid, stride=1):
        super().__init__()
        cout = 4 * mid
        self.c1, self.b1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.c2, self.b2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid)
        self.c3, self.b3 = nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


@_seeded
def resnet_bottleneck():
    """A bottleneck ResNet (F.relu, max pool stem) on 64x64 images."""
    blocks = [Bottleneck(16, 8), Bottleneck(32, 8), Bottleneck(32, 16, 2), Bottleneck(64, 16)]
    model = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.MaxPool2d(3, 2, 1), *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(64, 100))
    return model, (torch.randn(4, 3, 64, 64),), blocks


class UNet(nn.Module):
    """A two-level U-Net: double convolutions, max pooling, transposed-convolution upsampling
    and skip concatenations, with a sigmoid mask and a BCE loss inside forward."""

    @staticmethod
    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    def __init__(self):
        super().__init__()
        self.d1, self.d2, self.mid = self.double(3, 8), self.double(8, 16), self.double(16, 32)
        self.up2, self.u2 = nn.ConvTranspose2d(32, 16, 2, 2), self.double(32, 16)
        self.up1, self.u1 = nn.ConvTranspose2d(16, 8, 2, 2), self.double(16, 8)
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, x, target):
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        m = self.mid(F.max_pool2d(b, 2))
        y = self.u2(torch.cat([self.up2(m), b], dim=1))
        y = self.u1(torch.cat([self.up1(y), a], dim=1))
        return F.binary_cross_entropy_with_logits(self.head(y), target)


@_seeded
def unet():
    model = UNet()
    x = torch.randn(2, 3, 32, 32)
    target = (torch.rand(2, 1, 32, 32) > 0.5).float()
    return model, (x, target), [model.d1, model.d2, model.mid, model.u2, model.u1]


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.norm, self.conv = nn.BatchNorm2d(cin), nn.Conv2d(cin, growth, 3, padding=1,
                                                              bias=False)

    def forward(self, features):
        return self.conv(F.relu(self.norm(torch.cat(features, 1))))


class DenseNet(nn.Module):
    """Two dense blocks (every layer reads the concatenation of all before it) and a
    transition with average pooling."""

    def __init__(self, growth=8, layers=4):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.block1 = nn.ModuleList(DenseLayer(16 + k * growth, growth) for k in range(layers))
        c = 16 + layers * growth
        self.trans = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1),
                                   nn.AvgPool2d(2))
        self.block2 = nn.ModuleList(DenseLayer(c // 2 + k * growth, growth)
                                    for k in range(layers))
        self.head = nn.Linear(c // 2 + layers * growth, 10)

    @staticmethod
    def dense(block, x):
        features = [x]
        for layer in block:
            features.append(layer(features))
        return torch.cat(features, 1)

    def forward(self, x):
        x = self.trans(self.dense(self.block1, self.stem(x)))
        x = self.dense(self.block2, x)
        return self.head(x.mean(dim=(2, 3)))


@_seeded
def densenet():
    model = DenseNet()
    return model, (torch.randn(4, 3, 32, 32),), [model.trans]


class AudioNet(nn.Module):
    """A 1-D convolutional keyword spotter on raw audio (M5-style): Conv1d, BatchNorm1d,
    nn.ReLU(), MaxPool1d, log_softmax and an NLL loss inside forward."""

    def __init__(self, classes=12):
        super().__init__()
        chans = [1, 16, 16, 32, 32]
        layers = []
        for k in range(4):
            layers += [nn.Conv1d(chans[k], chans[k + 1], 80 if k == 0 else 3,
                                 stride=8 if k == 0 else 1, padding=0 if k == 0 else 1),
                       nn.BatchNorm1d(chans[k + 1]), nn.ReLU(), nn.MaxPool1d(4 if k < 3 else 2)]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(32, classes)

    def forward(self, wave, labels):
        x = self.features(wave)
        logits = self.fc(F.avg_pool1d(x, x.shape[-1]).squeeze(-1))
        return F.nll_loss(F.log_softmax(logits, dim=-1), labels)


@_seeded
def audio_m5():
    model = AudioNet()
    return model, (torch.randn(8, 1, 8000), torch.randint(0, 12, (8,))), [model.features]


@_seeded
def groupnorm_cnn():
    """A CNN with GroupNorm and SiLU (detection-backbone style), strided convolutions."""
    def block(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.GroupNorm(4, cout), nn.SiLU())
    blocks = [block(3, 16, 1), block(16, 32, 2), block(32, 32, 1), block(32, 64, 2)]
    model = nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    return model, (torch.randn(4, 3, 32, 32),), blocks


class StyleNet(nn.Module):
    """A style-transfer generator: reflection pads, InstanceNorm (no running statistics),
    residual blocks and nearest-neighbour upsampling."""

    @staticmethod
    def conv(cin, cout, k, stride=1):
        return nn.Sequential(nn.ReflectionPad2d(k // 2), nn.Conv2d(cin, cout, k, stride),
                             nn.InstanceNorm2d(cout, affine=True), nn.ReLU())

    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(self.conv(3, 8, 5), self.conv(8, 16, 3, 2))
        self.res = nn.ModuleList(nn.Sequential(self.conv(16, 16, 3), nn.ReflectionPad2d(1),
                                               nn.Conv2d(16, 16, 3),
                                               nn.InstanceNorm2d(16, affine=True))
                                 for _ in range(2))
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), self.conv(16, 8, 3),
                                nn.Conv2d(8, 3, 5, padding=2))

    def forward(self, x):
        y = self.down(x)
        for block in self.res:
            y = y + block(y)
        return torch.tanh(self.up(y))


@_seeded
def style_instancenorm():
    model = StyleNet()
    return model, (torch.randn(2, 3, 32, 32),), list(model.res)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
            nn.ReLU6(), nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.body(x) if self.use_res else self.body(x)


@_seeded
def mobilenet_v2_small():
    """MobileNet v2 blocks: depthwise convolutions, ReLU6, linear bottlenecks, dropout."""
    blocks = [InvertedResidual(16, 16, 1), InvertedResidual(16, 24, 2),
              InvertedResidual(24, 24, 1), InvertedResidual(24, 32, 2)]
    model = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
                          *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
                          nn.Linear(32, 10))
    return model, (torch.randn(4, 3, 32, 32),), blocks


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))


@_seeded
def se_vgg():
    """A VGG-style net with squeeze-and-excitation, LeakyReLU, max pooling and dropout."""
    def stage(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout),
                             nn.LeakyReLU(0.1), nn.Conv2d(cout, cout, 3, padding=1),
                             nn.BatchNorm2d(cout), nn.LeakyReLU(0.1), SqueezeExcite(cout),
                             nn.MaxPool2d(2))
    stages = [stage(3, 16), stage(16, 32), stage(32, 64)]
    model = nn.Sequential(*stages, nn.Flatten(), nn.Dropout(0.3), nn.Linear(64 * 4 * 4, 128),
                          nn.ELU(), nn.Linear(128, 10))
    return model, (torch.randn(4, 3, 32, 32),), stages


class ConvAutoencoder(nn.Module):
    """Strided convolutions down, transposed convolutions up, Softplus, an MSE loss."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.Softplus(),
                                 nn.Conv2d(16, 32, 3, 2, 1), nn.Softplus())
        self.dec = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.Softplus(),
                                 nn.ConvTranspose2d(16, 1, 4, 2, 1), nn.Sigmoid())

    def forward(self, x):
        return F.mse_loss(self.dec(self.enc(x)), x)


@_seeded
def conv_autoencoder():
    model = ConvAutoencoder()
    return model, (torch.rand(8, 1, 28, 28),), [model.enc, model.dec]


# ---- recurrent networks -----------------------------------------------------------------------


class Tagger(nn.Module):
    """A sequence tagger: embeddings, a bidirectional LSTM or GRU, a linear layer and a
    cross-entropy loss over every position."""

    def __init__(self, cell, vocab=500, dim=32, hidden=48, tags=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = cell(dim, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, words, tags):
        h, _ = self.rnn(self.embed(words))
        logits = self.out(h)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tags.reshape(-1))


def _tagger(cell):
    model = Tagger(cell)
    words, tags = torch.randint(0, 500, (4, 12)), torch.randint(0, 10, (4, 12))
    return model, (words, tags), [model.rnn]


@_seeded
def lstm_tagger():
    return _tagger(nn.LSTM)


@_seeded
def gru_tagger():
    return _tagger(nn.GRU)


class AttentionStep(nn.Module):
    """One decoder step: LSTM cell, MLP (Bahdanau) attention over the encoder states, logits."""

    def __init__(self, vocab, hidden):
        super().__init__()
        self.cell = nn.LSTMCell(2 * hidden, hidden)
        self.query = nn.Linear(hidden, hidden, bias=False)
        self.score = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, x, context, h, c, keys, memory):
        h, c = self.cell(torch.cat([x, context], dim=1), (h, c))
        energy = torch.tanh(keys + self.query(h).unsqueeze(1))  # [B, S, H]
        weights = torch.softmax(self.score(energy).squeeze(2), dim=1)
        context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
        return self.out(torch.cat([h, context], dim=1)), context, h, c


class Seq2SeqAttention(nn.Module):
    """An LSTM encoder-decoder with MLP attention (the NMT model of Echo's paper)."""

    def __init__(self, vocab=256, hidden=64, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.key = nn.Linear(hidden, hidden)
        self.step = AttentionStep(vocab, hidden)

    def forward(self, src, tgt):
        memory, (h, c) = self.encoder(self.embed(src))
        h, c = h[-1], c[-1]
        keys = self.key(memory)
        context = torch.zeros_like(h)
        logits = []
        for t in range(tgt.shape[1]):
            out, context, h, c = self.step(self.embed(tgt[:, t]), context, h, c, keys, memory)
            logits.append(out)
        return torch.stack(logits, dim=1)


def nmt(hidden=64, batch=8, vocab=256, source=16, target=8):
    torch.manual_seed(0)
    model = Seq2SeqAttention(vocab, hidden)
    src = torch.randint(0, vocab, (batch, source))
    tgt = torch.randint(0, vocab, (batch, target))
    return model, (src, tgt), [model.encoder, model.step]


class DeepSpeech2(nn.Module):
    """Two 2-D convolutions over the spectrogram with batch norm and hardtanh, then
    bidirectional LSTMs and a classifier."""

    def __init__(self, features=32, hidden=64, classes=29):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, (11, 11), stride=(2, 2), padding=(5, 5)), nn.BatchNorm2d(8),
            nn.Hardtanh(0, 20),
            nn.Conv2d(8, 8, (11, 11), stride=(2, 1), padding=(5, 5)), nn.BatchNorm2d(8),
            nn.Hardtanh(0, 20))
        self.rnn = nn.LSTM(8 * features // 4, hidden, 2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, spec):  # [B, 1, features, time]
        x = self.conv(spec)
        b, c, f, t = x.shape
        x = x.permute(0, 3, 1, 2).reshape(b, t, c * f)
        x, _ = self.rnn(x)
        return self.fc(x)


@_seeded
def deepspeech2():
    model = DeepSpeech2()
    return model, (torch.randn(4, 1, 32, 16),), [model.conv, model.rnn]


# ---- attention networks -----------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention, with the explicit -inf causal mask (masked_fill) rather than the
    fused kernel."""

    def __init__(self, dim, heads, block):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.1), nn.Dropout(0.1)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class GPTBlock(nn.Module):
    def __init__(self, dim, heads, block):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, block)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, vocab=128, dim=64, heads=4, layers=2, block=32):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
        self.blocks = nn.ModuleList(GPTBlock(dim, heads, block) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


@_seeded
def nanogpt():
    model = NanoGPT()
    idx, targets = torch.randint(0, 128, (4, 32)), torch.randint(0, 128, (4, 32))
    return model, (idx, targets), list(model.blocks)


class ViT(nn.Module):
    """A small vision transformer: patch embedding by a strided convolution, a class token,
    nn.MultiheadAttention blocks with pre-norm and exact GELU."""

    def __init__(self, image=32, patch=4, dim=64, heads=4, layers=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.norms1 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.attns = nn.ModuleList(nn.MultiheadAttention(dim, heads, batch_first=True)
                                   for _ in range(layers))
        self.norms2 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                                nn.Linear(2 * dim, dim)) for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, classes))

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for n1, attn, n2, mlp in zip(self.norms1, self.attns, self.norms2, self.mlps):
            h = n1(x)
            x = x + attn(h, h, h, need_weights=False)[0]
            x = x + mlp(n2(x))
        return self.head(x[:, 0])


@_seeded
def vit():
    model = ViT()
    return model, (torch.randn(4, 3, 32, 32),), list(model.mlps)


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(),
                                       nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                         nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


@_seeded
def mlp_mixer():
    """MLP-Mixer: token mixing across transposes, channel mixing, a mean-pooled head."""
    blocks = [MixerBlock(64, 48) for _ in range(3)]
    model = nn.Sequential(nn.Conv2d(3, 48, 4, 4), nn.Flatten(2), Transpose(), *blocks,
                          nn.LayerNorm(48), MeanTokens(), nn.Linear(48, 10))
    return model, (torch.randn(4, 3, 32, 32),), blocks


class Transpose(nn.Module):
    def forward(self, x):
        return x.transpose(1, 2)


class MeanTokens(nn.Module):
    def forward(self, x):
        return x.mean(dim=1)


class BertMini(nn.Module):
    """BERT-style encoder: word, position and type embeddings, a padding mask turned into -inf
    additive scores, hand-written attention with dropout, exact GELU, a masked-token loss."""

    def __init__(self, vocab=300, dim=64, heads=4, layers=2, length=24):
        super().__init__()
        self.heads = heads
        self.word, self.position = nn.Embedding(vocab, dim), nn.Embedding(length, dim)
        self.kind = nn.Embedding(2, dim)
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.ModuleList(nn.Linear(dim, 3 * dim) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.norm1 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                               nn.Linear(4 * dim, dim), nn.Dropout(0.1))
                                 for _ in range(layers))
        self.norm2 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.drop = nn.Dropout(0.1)
        self.decoder = nn.Linear(dim, vocab)

    def attention(self, k, x, pad):
        b, t, c = x.shape
        q, key, v = self.qkv[k](x).chunk(3, dim=-1)
        split = lambda z: z.reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        scores = split(q) @ split(key).transpose(-1, -2) / math.sqrt(c // self.heads)
        scores = scores + torch.zeros_like(pad, dtype=x.dtype).masked_fill(
            pad, float("-inf"))[:, None, None, :]
        y = self.drop(scores.softmax(-1)) @ split(v)
        return self.proj[k](y.permute(0, 2, 1, 3).reshape(b, t, c))

    def forward(self, ids, kinds, pad, labels):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.drop(self.norm(self.word(ids) + self.position(pos) + self.kind(kinds)))
        for k in range(len(self.qkv)):
            x = self.norm1[k](x + self.attention(k, x, pad))
            x = self.norm2[k](x + self.ffn[k](x))
        logits = self.decoder(x)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1),
                               ignore_index=-100)


@_seeded
def bert_mini():
    model = BertMini()
    ids, kinds = torch.randint(0, 300, (4, 24)), torch.randint(0, 2, (4, 24))
    pad = torch.zeros(4, 24, dtype=torch.bool)
    pad[:, 20:] = True
    labels = torch.full((4, 24), -100)
    labels[:, ::3] = ids[:, ::3]
    return model, (ids, kinds, pad, labels), list(model.ffn)


@_seeded
def transformer():
    """torch.nn.Transformer (post-norm, ReLU, dropout) as a sequence-to-sequence model."""
    model = TransformerSeq2Seq()
    src, tgt = torch.randint(0, 128, (4, 16)), torch.randint(0, 128, (4, 16))
    blocks = list(model.transformer.encoder.layers) + list(model.transformer.decoder.layers)
    return model, (src, tgt), blocks


class TransformerSeq2Seq(nn.Module):
    def __init__(self, vocab=128, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.transformer = nn.Transformer(dim, heads, layers, layers, 2 * dim, 0.1,
                                          batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.out(self.transformer(self.embed(src), self.embed(tgt), tgt_mask=mask,
                                         tgt_is_causal=True))


# ---- other families ---------------------------------------------------------------------------


class WaveNet(nn.Module):
    """WaveNet: causal dilated convolutions by an explicit left pad (F.pad), tanh x sigmoid
    gates from one chunked convolution, residual and skip paths, a softmax over 256 levels."""

    def __init__(self, channels=32, dilations=(1, 2, 4, 8, 1, 2, 4, 8)):
        super().__init__()
        self.dilations = dilations
        self.inp = nn.Conv1d(1, channels, 1)
        self.gates = nn.ModuleList(nn.Conv1d(channels, 2 * channels, 2, dilation=d)
                                   for d in dilations)
        self.res = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in dilations)
        self.skip = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in dilations)
        self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(channels, channels, 1), nn.ReLU(),
                                 nn.Conv1d(channels, 256, 1))

    def forward(self, audio, target):
        x, skips = self.inp(audio), 0
        for d, gate, res, skip in zip(self.dilations, self.gates, self.res, self.skip):
            filt, g = gate(F.pad(x, (d, 0))).chunk(2, dim=1)
            z = torch.tanh(filt) * torch.sigmoid(g)
            x = x + res(z)
            skips = skips + skip(z)
        return F.cross_entropy(self.out(skips), target)


@_seeded
def wavenet():
    model = WaveNet()
    return model, (torch.randn(2, 1, 256), torch.randint(0, 256, (2, 256))), list(model.gates)


class Recommender(nn.Module):
    """A DLRM-style recommender: EmbeddingBag sums per sparse feature, a bottom MLP on dense
    features, pairwise dot-product interactions, a top MLP and a BCE loss."""

    def __init__(self, tables=4, rows=1000, dim=16):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, dim), nn.ReLU())
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(dim + pairs, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense, ids, offsets, clicks):
        feats = [self.bottom(dense)] + [bag(ids[k], offsets[k]) for k, bag in
                                        enumerate(self.bags)]
        z = torch.stack(feats, dim=1)
        inter = torch.bmm(z, z.transpose(1, 2))
        i, j = torch.triu_indices(len(feats), len(feats), 1)
        x = torch.cat([feats[0], inter[:, i, j]], dim=1)
        return F.binary_cross_entropy_with_logits(self.top(x).squeeze(1), clicks)


@_seeded
def recommender():
    model = Recommender()
    batch, per_bag = 32, 3
    ids = torch.randint(0, 1000, (4, batch * per_bag))
    offsets = torch.arange(0, batch * per_bag, per_bag).repeat(4, 1)
    return model, (torch.randn(batch, 13), ids, offsets, torch.rand(batch)), [model.top]


class GatedMLP(nn.Module):
    """A LLaMA-style feed-forward stack: RMSNorm written by hand, SwiGLU (silu(x W1) * x W3),
    residual connections."""

    def __init__(self, dim=64, hidden=172, layers=3):
        super().__init__()
        self.w1 = nn.ModuleList(nn.Linear(dim, hidden, bias=False) for _ in range(layers))
        self.w3 = nn.ModuleList(nn.Linear(dim, hidden, bias=False) for _ in range(layers))
        self.w2 = nn.ModuleList(nn.Linear(hidden, dim, bias=False) for _ in range(layers))
        self.scale = nn.ParameterList(nn.Parameter(torch.ones(dim)) for _ in range(layers))

    def forward(self, x):
        for w1, w2, w3, g in zip(self.w1, self.w2, self.w3, self.scale):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g
            x = x + w2(F.silu(w1(h)) * w3(h))
        return x


@_seeded
def gated_mlp():
    model = GatedMLP()
    return model, (torch.randn(8, 32, 64),), []


class TabularMLP(nn.Module):
    """A tabular classifier: BatchNorm1d, ELU, LeakyReLU, Softplus and dropout between linear
    layers, a log-softmax head with an NLL loss."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(40, 256), nn.BatchNorm1d(256), nn.ELU(), nn.Dropout(0.2),
            nn.Linear(256, 256), nn.BatchNorm1d(256), nn.LeakyReLU(0.01), nn.Dropout(0.2),
            nn.Linear(256, 128), nn.Softplus(), nn.Linear(128, 5), nn.LogSoftmax(dim=1))

    def forward(self, x, y):
        return F.nll_loss(self.net(x), y)


@_seeded
def tabular_mlp():
    model = TabularMLP()
    return model, (torch.randn(64, 40), torch.randint(0, 5, (64,))), []


class TCN(nn.Module):
    """A temporal convolutional network: weight-normalised-free dilated Conv1d blocks with
    explicit chomping (slicing off the right pad), ReLU, dropout and residuals."""

    def __init__(self, channels=(16, 32, 32), kernel=3):
        super().__init__()
        self.blocks = nn.ModuleList()
        cin = 4
        for k, c in enumerate(channels):
            d = 2 ** k
            self.blocks.append(nn.ModuleDict({
                "c1": nn.Conv1d(cin, c, kernel, padding=(kernel - 1) * d, dilation=d),
                "c2": nn.Conv1d(c, c, kernel, padding=(kernel - 1) * d, dilation=d),
                "down": nn.Conv1d(cin, c, 1) if cin != c else nn.Identity()}))
            cin = c
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(cin, 3)

    def forward(self, x):
        t = x.shape[-1]
        for b in self.blocks:
            y = self.drop(F.relu(b["c1"](x)[:, :, :t]))
            y = self.drop(F.relu(b["c2"](y)[:, :, :t]))
            x = F.relu(y + b["down"](x))
        return self.head(x[:, :, -1])


@_seeded
def tcn():
    model = TCN()
    return model, (torch.randn(8, 4, 64),), list(model.blocks)


class ResNet(nn.Module):
    """torchvision's ResNet architecture, written out (7x7 stem, max pool, four stages of
    basic or bottleneck blocks, average pool, classifier)."""

    def __init__(self, depth, classes=100):
        super().__init__()
        basic = depth < 50
        counts = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3]}[depth]
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 64
        for k, count in enumerate(counts):
            width = 64 * 2 ** k
            blocks = []
            for j in range(count):
                stride = 2 if k > 0 and j == 0 else 1
                blocks.append(BasicBlock(cin, width, stride) if basic else
                              Bottleneck(cin, width, stride))
                cin = width if basic else 4 * width
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1), 1))


def resnet(depth, batch=8, resolution=64, classes=100):
    torch.manual_seed(0)
    model = ResNet(depth, classes)
    return model, (torch.randn(batch, 3, resolution, resolution),), list(model.stages)


def _gpt_large():
    torch.manual_seed(0)
    model = NanoGPT(vocab=512, dim=256, heads=8, layers=4, block=128)
    idx, targets = torch.randint(0, 512, (8, 128)), torch.randint(0, 512, (8, 128))
    return model, (idx, targets), list(model.blocks)


def _gated_mlp_large():
    torch.manual_seed(0)
    model = GatedMLP(dim=512, hidden=1376, layers=4)
    return model, (torch.randn(8, 128, 512),), []


def _bert_large():
    torch.manual_seed(0)
    model = BertMini(vocab=1000, dim=256, heads=8, layers=4, length=128)
    ids, kinds = torch.randint(0, 1000, (8, 128)), torch.randint(0, 2, (8, 128))
    pad = torch.zeros(8, 128, dtype=torch.bool)
    pad[:, 100:] = True
    labels = torch.full((8, 128), -100)
    labels[:, ::3] = ids[:, ::3]
    return model, (ids, kinds, pad, labels), list(model.ffn)


def _unet_large():
    torch.manual_seed(0)
    model = UNet()
    target = (torch.rand(8, 1, 64, 64) > 0.5).float()
    return model, (torch.randn(8, 3, 64, 64), target), []


# Larger sizes for timing (python/bench/measure.py), where arithmetic rather than per-operator
# dispatch sets the step time. Not in the test suite.
BENCH = {
    "resnet18-64": lambda: resnet(18),
    "resnet50-64": lambda: resnet(50),
    "gpt-256": _gpt_large,
    "gated-mlp-512": _gated_mlp_large,
    "bert-256": _bert_large,
    "unet-64": _unet_large,
    "nmt-256": lambda: nmt(hidden=256, batch=32, vocab=1024, source=24, target=16),
}

ZOO = {f.__name__: f for f in [
    resnet_cifar, resnet_bottleneck, unet, densenet, audio_m5, groupnorm_cnn,
    style_instancenorm, mobilenet_v2_small, se_vgg, conv_autoencoder, lstm_tagger, gru_tagger,
    deepspeech2, nanogpt, vit, mlp_mixer, bert_mini, transformer, wavenet, recommender,
    gated_mlp, tabular_mlp, tcn]}
ZOO["nmt"] = nmt
