#include "io/elf.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>

#include "io/input_error.hpp"

namespace pkb::io {

std::vector<std::string> elf_section_strings(const std::string& path, const std::string& name) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot be read");
  auto bad = [&] { return InputError(path + ": not a 64-bit ELF shared object"); };
  auto read_at = [&](uint64_t off, void* to, size_t n) {
    f.seekg(static_cast<std::streamoff>(off));
    if (!f.read(static_cast<char*>(to), static_cast<std::streamsize>(n))) throw bad();
  };
  Elf64_Ehdr eh{};
  read_at(0, &eh, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum)
    throw bad();
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  read_at(eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr));
  const Elf64_Shdr& names_at = sections[eh.e_shstrndx];
  std::string names(names_at.sh_size, '\0');
  read_at(names_at.sh_offset, names.data(), names.size());
  std::vector<std::string> out;
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_name >= names.size() || std::strcmp(names.c_str() + s.sh_name, name.c_str()) != 0) continue;
    if (s.sh_type == SHT_NOBITS) break;
    std::string bytes(s.sh_size, '\0');
    read_at(s.sh_offset, bytes.data(), bytes.size());
    // Entries are NUL-terminated; the linker may pad between them with more NULs.
    for (size_t at = 0; at < bytes.size();) {
      size_t end = bytes.find('\0', at);
      if (end == std::string::npos) end = bytes.size();
      if (end > at) out.push_back(bytes.substr(at, end - at));
      at = end + 1;
    }
    break;
  }
  return out;
}

}  // namespace pkb::io
