// The table of architectures. Each arch_<name>.cpp defines its ArchInfo; referencing it
// here also keeps the linker from dropping that file from the static library.
#include <string>

#include "model/arch.h"
#include "util/error.h"

namespace ember {

extern const ArchInfo kArchLlama;
extern const ArchInfo kArchQwen2;
extern const ArchInfo kArchQwen3;
extern const ArchInfo kArchGemma3;
extern const ArchInfo kArchGemma2;
extern const ArchInfo kArchPhi3;
extern const ArchInfo kArchMixtral;
extern const ArchInfo kArchQwen2Moe;
extern const ArchInfo kArchQwen3Moe;
extern const ArchInfo kArchOlmoe;
extern const ArchInfo kArchGptOss;

// A name shared by two records (llama) finds the first: the one that loads the files.
static const ArchInfo* const kArchs[] = {&kArchLlama,   &kArchQwen2,    &kArchQwen3,    &kArchGemma3,
                                         &kArchGemma2,  &kArchPhi3,     &kArchMixtral,  &kArchQwen2Moe,
                                         &kArchQwen3Moe, &kArchOlmoe,    &kArchGptOss};

const ArchInfo* find_arch(std::string_view name) {
  for (const ArchInfo* a : kArchs)
    if (name == a->name) return a;
  for (const ArchInfo* a : kArchs)
    if (a->alias && name == a->alias) return a;
  return nullptr;
}

const ArchInfo& require_arch(std::string_view name) {
  const ArchInfo* a = find_arch(name);
  if (!a) fail(ErrorKind::Unsupported, "architecture '{}' is not supported ({})", name, known_archs());
  return *a;
}

const ArchInfo* find_arch_by_hf_class(std::string_view hf_class) {
  for (const ArchInfo* a : kArchs)
    for (const char* c : a->hf.classes)
      if (hf_class == c) return a;
  return nullptr;
}

std::string known_archs() {
  std::string s;
  for (const ArchInfo* a : kArchs) {
    if (a->alias) {
      s += s.empty() ? "" : ", ";
      s += a->alias;
      continue;
    }
    if (!s.empty()) s += ", ";
    s += a->name;
  }
  return s;
}

}  // namespace ember
