// Runs an AOTInductor package from C++ (as AOTInductor's docs show): reads float32
// inputs from raw files, writes the outputs as raw float32 files.
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <ATen/ATen.h>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  // usage: run_package model.pt2 out_prefix in0.bin d0,d1,... [in1.bin dims ...]
  if (argc < 5 || (argc - 3) % 2 != 0) {
    std::cerr << "usage: run_package model.pt2 out_prefix input.bin dims [input.bin dims ...]\n";
    return 2;
  }
  c10::InferenceMode mode;
  std::vector<at::Tensor> inputs;
  for (int i = 3; i < argc; i += 2) {
    std::vector<int64_t> dims;
    std::string text = argv[i + 1];
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(',', start);
      if (end == std::string::npos) end = text.size();
      dims.push_back(std::stoll(text.substr(start, end - start)));
      start = end + 1;
    }
    at::Tensor t = at::empty(dims, at::kFloat);
    std::ifstream in(argv[i], std::ios::binary);
    in.read(reinterpret_cast<char*>(t.data_ptr<float>()), t.numel() * sizeof(float));
    inputs.push_back(t);
  }
  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  std::vector<at::Tensor> outputs = loader.run(inputs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    at::Tensor out = outputs[k].contiguous().to(at::kFloat);
    std::ofstream file(std::string(argv[2]) + std::to_string(k) + ".bin", std::ios::binary);
    file.write(reinterpret_cast<const char*>(out.data_ptr<float>()), out.numel() * sizeof(float));
    std::cout << "output " << k << ": " << out.sizes() << "\n";
  }
  return 0;
}
