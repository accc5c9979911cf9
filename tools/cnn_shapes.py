#!/usr/bin/env python3
"""Per-sample shape figures of the CNN presets (catalog/models/*.yaml), from the published
architecture tables, for the step-time roofline of estimate/compute.cc:

  forward_elements_per_sample    elements of every tensor the forward pass writes (convolution,
                                 batch-norm, activation, pooling, residual-add and SE outputs),
                                 plus the input image
  depthwise_flops_per_sample     forward FLOPs (2 x multiply-adds) of the depthwise convolutions,
                                 which run on the CUDA cores (part of forward_flops_per_sample)
  weighted_layers                convolutions + linear layers (SE FCs included)
  conv_io_ratio                  elements of the non-depthwise convolutions' inputs + outputs per
                                 forward-written element: what cuDNN transposes NCHW <-> NHWC
                                 around the tensor-core convolutions when activations stay NCHW
                                 (TF32); the mean over the presets x 6 moves is the prior of
                                 TimeCalibration::generic_nchw_transpose_elements
  GMACs                          printed as a check against the published FLOPs

Architectures: ResNet-50 v1.5 (He et al. 2015, arXiv 1512.03385, Table 1; stride on the 3x3 as
torchvision), ResNeXt-101 32x4d (Xie et al. 2017, arXiv 1611.05431, Table 1), SE-ResNeXt-101
32x4d (Hu et al. 2018, arXiv 1709.01507, Table 1, reduction 16), EfficientNet-B0 (Tan & Le 2019,
arXiv 1905.11946, Table 1; B4 = width 1.4, depth 1.8 at 380 px, the compound scaling of the
reference implementation: channels rounded to multiples of 8, depth rounded up), EfficientNetV2-S
(Tan & Le 2021, arXiv 2104.00298, Table 4). Padding k//2 (torchvision). Deterministic; no input.
Usage: python3 tools/cnn_shapes.py
"""
import math


class Net:
    def __init__(self, image):
        self.elements = 3 * image * image
        self.depthwise_macs = 0
        self.macs = 0
        self.layers = 0
        self.conv_io = 0  # inputs + outputs of the non-depthwise (tensor-core) convolutions

    def conv(self, cin, cout, k, h, stride=1, groups=1):
        out = (h + 2 * (k // 2) - k) // stride + 1
        self.elements += cout * out * out
        self.macs += cout * out * out * (cin // groups) * k * k
        self.layers += 1
        if groups > 1 and groups == cin == cout:
            self.depthwise_macs += cout * out * out * k * k
        else:
            self.conv_io += cin * h * h + cout * out * out
        return out

    def fc(self, cin, cout):
        self.macs += cin * cout
        self.layers += 1

    def write(self, channels, h, tensors=1):  # elementwise outputs (BN, activation, add, ...)
        self.elements += tensors * channels * h * h


def resnet(blocks, groups=1, width_per_group=64, se=False, image=224):
    n = Net(image)
    h = n.conv(3, 64, 7, image, 2)
    n.write(64, h, 2)  # BN, ReLU
    h = (h + 2 - 3) // 2 + 1
    n.write(64, h)  # max-pool
    cin = 64
    for stage, count in enumerate(blocks):
        base = 64 * 2**stage
        width = base * width_per_group // 64 * groups
        cout = base * 4
        for j in range(count):
            stride = 2 if j == 0 and stage > 0 else 1
            n.conv(cin, width, 1, h)
            n.write(width, h, 2)
            out = n.conv(width, width, 3, h, stride, groups)
            n.write(width, out, 2)
            n.conv(width, cout, 1, out)
            n.write(cout, out)
            if se:  # squeeze (pool), two FCs, channel-wise scale
                n.fc(cout, cout // 16)
                n.fc(cout // 16, cout)
                n.write(cout, out)
            if j == 0:
                n.conv(cin, cout, 1, h, stride)
                n.write(cout, out)
            n.write(cout, out, 2)  # add, ReLU
            h, cin = out, cout
    n.fc(cin, 1000)
    return n


def round_channels(c, width):
    c *= width
    rounded = max(8, int(c + 4) // 8 * 8)
    return int(rounded + 8 if rounded < 0.9 * c else rounded)


# (block, expansion, kernel, stride, channels, layers, se ratio of the block input channels)
B0 = [("mb", 1, 3, 1, 16, 1, .25), ("mb", 6, 3, 2, 24, 2, .25), ("mb", 6, 5, 2, 40, 2, .25),
      ("mb", 6, 3, 2, 80, 3, .25), ("mb", 6, 5, 1, 112, 3, .25), ("mb", 6, 5, 2, 192, 4, .25),
      ("mb", 6, 3, 1, 320, 1, .25)]
V2S = [("fused", 1, 3, 1, 24, 2, 0), ("fused", 4, 3, 2, 48, 4, 0), ("fused", 4, 3, 2, 64, 4, 0),
       ("mb", 4, 3, 2, 128, 6, .25), ("mb", 6, 3, 1, 160, 9, .25), ("mb", 6, 3, 2, 256, 15, .25)]


def efficientnet(stages, width, depth, image, stem=32, head=1280, scale_head=True):
    n = Net(image)
    cin = round_channels(stem, width)
    h = n.conv(3, cin, 3, image, 2)
    n.write(cin, h, 2)
    for kind, e, k, s, c, count, se in stages:
        cout = round_channels(c, width)
        for j in range(int(math.ceil(count * depth))):
            stride = s if j == 0 else 1
            if kind == "fused":
                if e != 1:
                    out = n.conv(cin, cin * e, k, h, stride)
                    n.write(cin * e, out, 2)
                    n.conv(cin * e, cout, 1, out)
                    n.write(cout, out)
                else:
                    out = n.conv(cin, cout, k, h, stride)
                    n.write(cout, out, 2)
            else:
                wide = cin * e
                if e != 1:
                    n.conv(cin, wide, 1, h)
                    n.write(wide, h, 2)
                out = n.conv(wide, wide, k, h, stride, groups=wide)
                n.write(wide, out, 2)
                if se:
                    squeezed = max(1, int(cin * se))
                    n.fc(wide, squeezed)
                    n.fc(squeezed, wide)
                    n.write(wide, out)
                n.conv(wide, cout, 1, out)
                n.write(cout, out)
            if stride == 1 and cin == cout:
                n.write(cout, out)  # residual add
            h, cin = out, cout
    top = round_channels(head, width) if scale_head else head
    n.conv(cin, top, 1, h)
    n.write(top, h, 2)
    n.fc(top, 1000)
    return n


PRESETS = {
    "resnet-50 (224)": resnet([3, 4, 6, 3]),
    "resnext101-32x4d (224)": resnet([3, 4, 23, 3], groups=32, width_per_group=4),
    "se-resnext101-32x4d (224)": resnet([3, 4, 23, 3], groups=32, width_per_group=4, se=True),
    "efficientnet-b0 (224)": efficientnet(B0, 1.0, 1.0, 224),
    "efficientnet-b4 (380)": efficientnet(B0, 1.4, 1.8, 380),
    "efficientnetv2-s (384)": efficientnet(V2S, 1.0, 1.0, 384, stem=24, scale_head=False),
}

if __name__ == "__main__":
    for name, n in PRESETS.items():
        print(f"{name:27s} GMACs {n.macs / 1e9:6.3f}  forward_elements_per_sample {n.elements:.4g}"
              f"  depthwise_flops_per_sample {2 * n.depthwise_macs:.4g}  weighted_layers {n.layers}"
              f"  conv_io_ratio {n.conv_io / n.elements:.4f}")
    mean = sum(n.conv_io / n.elements for n in PRESETS.values()) / len(PRESETS)
    print(f"mean conv_io_ratio {mean:.4f}; x 6 moves = generic_nchw_transpose_elements prior "
          f"{6 * mean:.3g}")
