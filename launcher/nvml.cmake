# baton_nvml: GPU discovery through NVML loaded with dlopen. absl only, so GPU-only
# builds (which skip the rest of launcher/) carry it too.
if(NOT TARGET baton_nvml)
  add_library(baton_nvml STATIC ${CMAKE_CURRENT_LIST_DIR}/agent/nvml.cc)
  target_include_directories(baton_nvml PUBLIC ${CMAKE_SOURCE_DIR})
  target_link_libraries(baton_nvml PUBLIC absl::status absl::statusor ${CMAKE_DL_LIBS})
endif()
