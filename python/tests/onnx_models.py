"""Models as PyTorch users write them, exported to ONNX by torch.onnx.export, for memfold's
ONNX tests and the docs table (scripts/onnx_table.py). Each is small enough to run in a
second and keeps the shapes of its architecture: MobileNet v2 (inverted residuals, depthwise
convolutions, ReLU6), ResNet (basic blocks, batch norm, max pool), a transformer encoder
(PyTorch's own nn.TransformerEncoder), a GRU, stacked bidirectional LSTM and GRU layers, a 1-D
convolutional keyword spotter and a U-Net (skip concatenations, transposed convolutions and
bilinear upsampling)."""
import numpy as np
import torch
from torch import nn


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        layers = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()]
        for cin, cout, stride in [(16, 8, 1), (8, 16, 2), (16, 16, 1), (16, 24, 2), (24, 24, 1)]:
            layers.append(InvertedResidual(cin, cout, stride, 1 if cin == 16 and cout == 8 else 4))
        layers += [nn.Conv2d(24, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        x = self.features(x)
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()  # not in place, as users write it
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 64, 2))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(48, 4, 96, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(48, 8)

    def forward(self, x):
        return self.head(self.encoder(x))


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(20, 32, batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.head(y)


class KeywordSpotter(nn.Module):
    """A 1-D convolutional keyword spotter over 10 MFCC features of 49 frames: Conv1d, batch
    norm, ReLU, a strided and a depthwise Conv1d, MaxPool1d, the mean over time."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(10, 24, 3, padding=1), nn.BatchNorm1d(24), nn.ReLU(),
            nn.Conv1d(24, 32, 3, stride=2, padding=1), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 32, 3, groups=32, padding=1), nn.ReLU())
        self.head = nn.Linear(32, 12)

    def forward(self, x):
        return self.head(self.features(x).mean(-1))


class Recurrent(nn.Module):
    """Recurrent layers as users stack them: a two-layer bidirectional LSTM into a
    bidirectional GRU (both exporters write ONNX LSTM and GRU nodes of both directions)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(20, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(32, 12, batch_first=True, bidirectional=True)
        self.head = nn.Linear(24, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        return self.head(y)


def _double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = _double_conv(3, 8)
        self.down2 = _double_conv(8, 16)
        self.bottom = _double_conv(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = _double_conv(32, 16)
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec1 = _double_conv(24, 8)
        self.out = nn.Conv2d(8, 2, 1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        b = self.bottom(self.pool(d2))
        u2 = self.dec2(torch.cat([self.up2(b), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.out(u1)


# name -> (constructor, input shape)
MODELS = {
    "mobilenet_v2": (MobileNetV2, (1, 3, 64, 64)),
    "resnet": (ResNet, (1, 3, 64, 64)),
    "transformer": (Encoder, (1, 16, 48)),
    "gru": (Gru, (1, 12, 20)),
    "recurrent": (Recurrent, (1, 9, 20)),
    "keyword_spotter": (KeywordSpotter, (1, 10, 49)),
    "unet": (UNet, (1, 3, 32, 32)),
}


def build(name, seed=0):
    """The model in eval mode, with batch-norm statistics that are not the identity (so that
    folding them is tested), and an input of its shape."""
    torch.manual_seed(seed)
    make, shape = MODELS[name]
    model = make()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model.eval(), torch.randn(*shape)


def export(name, path, dynamo=True, opset=None):
    """Exports the model to `path` as torch.onnx.export does for users (the dynamo exporter
    by default, which writes weights to a .data file beside it; dynamo=False is the
    TorchScript exporter), and returns its input."""
    model, x = build(name)
    kwargs = {"dynamo": dynamo}
    if opset is not None:
        kwargs["opset_version"] = opset
    torch.onnx.export(model, (x,), str(path), **kwargs)
    return x


def quantize(float_path, path, x, fmt="QDQ"):
    """Statically quantises an exported model with ONNX Runtime's quantiser, as users do
    (int8 activations and per-channel int8 weights, calibrated on noisy copies of `x`), in QDQ
    form (QuantizeLinear/DequantizeLinear pairs) or the QOperator form (QLinearConv, ...)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            noisy = [x + 0.1 * rng.standard_normal(x.shape) for _ in range(4)]
            self.data = [{"x": n.astype(np.float32)} for n in noisy]

        def get_next(self):
            return self.data.pop() if self.data else None

    quantize_static(str(float_path), str(path), Calibration(),
                    quant_format=getattr(QuantFormat, fmt), activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
